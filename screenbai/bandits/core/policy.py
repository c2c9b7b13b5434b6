"""The policy contract: ask/tell, plates, state, and the vectorised fast-path hook.

Every algorithm is a ``Policy``. It never draws rewards itself: the caller asks which arm(s) to
test, runs the experiment (a simulator, or a real assay) and tells the outcomes back.

    while not policy.done:
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
    result = policy.result()

The contract. ``Policy`` is an abstract base class: an algorithm implements ``_select`` (the next
arms from the recorded outcomes, ``None`` when its stopping rule fires or its budget is spent, an
empty array to wait for outcomes still in flight), ``_update`` (record outcomes) and ``_recommend``.
The next choice is made when outcomes are recorded (at the end of ``tell``) or, with plates, lazily
in ``propose``; ``done`` only reads that bookkeeping and ``result()`` changes nothing (its
tie-breaks draw from a copy of the generator). Plates: ``propose(n)`` hands out up to n arms
(a plate; an empty array means "wait for outcomes in flight"), ``tell`` accepts outcomes for any
part of the arms in flight, in any order, and ``cancel`` takes failed wells back (they are proposed
again first). Arms in flight count in the design an adaptive rule chooses with (covariance,
counts) but never in an estimate, so a stopping rule only ever uses recorded outcomes;
``propose(1)`` followed by ``tell`` gives exactly the sequential choices, and ``ask()`` is
``propose()`` of the natural batch (one arm, an initialisation batch, a GSE stage) with ``tell``
then expecting exactly those arms. ``state_dict()`` / ``load_state_dict()`` write and restore the
whole state as plain data (state.py: arrays, numbers, strings, lists, dicts; no solver objects, no
caches), ``save_policy`` / ``load_policy`` (persistence.py) as one ``.npz`` file holding arrays and a
JSON document, so a restored policy asks what the uninterrupted one would. ``run(env)`` drives a policy against a
simulator; an algorithm may override it with a vectorised path that returns the same result, using
only the environment's public methods (``pull``, ``pull_sequence``).

The stopping rule and the certificate. A fixed-confidence algorithm builds its stopping rule in
``_setup`` (``stopping_rule``, a ``StoppingRule`` of parts.py: a confidence set valid at all times at
once and its test, saved with the state). From it this base derives, once for every algorithm,
``_certified_epsilon`` (per arm of the current answer, the smallest epsilon for which the set
certifies it epsilon-good at level delta), the model the certificate holds under
(``_certificate_model``; an algorithm adds caveats of its sampling there) and ``stopping_threshold``;
``certificate()`` then returns a ``Certificate`` (certainty/certificate.py) at any moment, and
``result()`` of a finished run carries ``diagnostics["certified_epsilon"]``. No rule (None, fixed
budgets): no certificate.
"""

from __future__ import annotations

import copy
import inspect
import math
from abc import ABC, abstractmethod
from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar, dataclass_transform

import numpy as np
from numpy.typing import ArrayLike

from screenbai.bandits.core.params import (  # DEFAULT_MAX_SAMPLES re-exported for existing imports
    COMMON,
    DEFAULT_MAX_SAMPLES,
    Anything,
    declare,
    pinned,
    rename,
    required,
    resolve,
    run_state,
    without_guarantee,
)
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.state import StateVersionError, decode_state, encode_state
from screenbai.bandits.numerics.checks import as_generator, check_features
from screenbai.bandits.numerics.ties import top_m

#: what ``_select`` returns to wait for outcomes in flight (and an empty plate)
NO_ARMS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Result:
    """What a finished (or interrupted) run recommends and what it cost.

    recommendation: the recommended arm indices (length m; m = 1 for best-arm identification).
    n_samples: observations used, initialisation included.
    pulls: pull count per arm (length K).
    stopped: True when the stopping rule fired or the budget was spent as planned; False when
        the run hit ``max_samples`` (a non-terminated run, reported separately, never averaged in).
    diagnostics: algorithm-specific extras (e.g. Newton iterations, number of LPs solved).
    """

    recommendation: tuple[int, ...]
    n_samples: int
    pulls: np.ndarray
    stopped: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> int:
        return self.recommendation[0]


@dataclass_transform(kw_only_default=True, field_specifiers=(required, pinned, run_state))
class _Declared(ABC):
    """The constructor every policy shares (see ``Policy``): its parameters are declared fields, as
    in a dataclass, and type checkers see the signature ``declare`` builds."""

    #: every field (parameters and the positional features), from ``params.declare``
    __parameters__: ClassVar[dict[str, Any]] = {}
    #: the attributes this class declares with ``run_state()`` (``params.declare``)
    __state__: ClassVar[tuple[str, ...]] = ()
    #: the frozen dataclass of the parameters (``params.declare``)
    Params: ClassVar[type]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:  # one constructor pattern
            raise TypeError(
                f"{cls.__name__} defines __init__; a policy declares its parameters as fields and sets itself up "
                "in _setup(features, p) (see Policy)"
            )
        declare(cls)

        def __init__(self, features, **given) -> None:
            _Declared._construct(self, features, given)

        # the public signature: ``self`` then ``cls.__signature__`` (explicit keyword-only parameters,
        # built by ``declare``); ``**given`` only lets deprecated names through to ``rename``
        sig = cls.__signature__  # type: ignore[attr-defined]
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        __init__.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[self_param, *sig.parameters.values()], return_annotation=None)
        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        __init__.__doc__ = f"A {cls.__name__} for these features (its parameters: ``{cls.__name__}.Params``)."
        setattr(cls, "__init__", __init__)  # noqa: B010 - mypy refuses assigning a method

    def __init__(self, features, **given) -> None:
        _Declared._construct(self, features, given)

    def _construct(self, features, given: dict) -> None:
        """Rename deprecated parameters, validate them, set them as attributes, ``_setup``, first choice."""
        cls = type(self)
        given = rename(cls, given)
        p = resolve(cls, given)
        self.params: Any = p  # the validated parameters (a frozen ``cls.Params``)
        for key in cls.__parameters__:
            if hasattr(p, key):
                setattr(self, key, getattr(p, key))
        self._setup(features, p)
        self._init_kwargs: dict[str, Any] = {k: v for k, v in given.items() if k != "rng"}
        self._advance()

    def _setup(self, features, p) -> None:  # pragma: no cover - Policy's
        raise NotImplementedError

    def _advance(self) -> None:  # pragma: no cover - Policy's
        raise NotImplementedError


class Policy(_Declared):
    """Base class: bookkeeping, validation, ask/tell, plates and state (see the module docstring).

    One constructor pattern. A subclass declares its parameters as annotated class attributes
    (``epsilon: float = param(0.1, NONNEGATIVE, "...")``, see params.py) and sets itself up in
    ``_setup(features, p)``, ``p`` being its validated parameters (a frozen ``cls.Params``; the
    same as ``self.params``), starting with ``super()._setup(features, p)``; it defines no
    ``__init__``. The constructor, the same for every policy, renames deprecated parameters (with a
    warning), validates them, sets each as an attribute (as a dataclass would), runs ``_setup`` and
    makes the first choice, so that ``done`` is known before the first ``ask``.

    Subclasses implement ``_select()``, ``_update(arms, rewards)`` and ``_recommend(rng)``, build
    their stopping rule in ``_setup`` (``stopping_rule``, parts.py; from ``_stopping_rule(p)``), and
    declare the attributes that change during a run with their types, ``_rounds: int = run_state()``
    (saved by ``state_dict``, restored by ``load_state_dict``; ``_state_attrs``, a tuple of names,
    is the older spelling, still read).
    ``n``/``sums`` (per-arm counts and reward sums of recorded outcomes) and ``n_samples`` are kept
    here; ``in_flight`` / ``n_in_flight`` tell ``_select`` which tests are out without an outcome.
    """

    name = "policy"
    #: rewards must be 0/1 (Bernoulli models); checked in ``tell``
    binary_rewards = False
    #: fixed-budget policies finish when the budget is spent
    fixed_budget = False
    #: the means are estimated through the features (a linear or logistic model), not arm by arm
    models_features = True
    #: attributes (besides the base bookkeeping) that change during a run: the policy's state
    _state_attrs: ClassVar[tuple[str, ...]] = ()
    #: deprecated parameter name -> current name (merged along the class hierarchy)
    renamed: ClassVar[dict[str, str]] = {}
    #: the sampling rule works with any valid stopping rule of its model: ``_setup`` takes its rule from
    #: ``_stopping_rule`` (``screenbai.bandits.rules.compose.with_stopping`` replaces it)
    foreign_stopping_rules: ClassVar[bool] = False
    #: what the forecast from ``stopping_threshold`` leaves out of this algorithm's cost, said wherever the
    #: forecast is printed (campaign init and status); "" when nothing known is left out
    forecast_caveat: ClassVar[str] = ""

    features: InitVar[ArrayLike] = required(Anything("a K x d feature matrix"), "the arms' features", kw_only=False)
    rng: Any = COMMON["rng"]
    max_samples: int = COMMON["max_samples"]
    #: the stopping rule and its confidence set (parts.py), built by ``_setup``; None: no valid set
    stopping_rule: StoppingRule | None = run_state()

    def _setup(self, features, p) -> None:
        """Validate the features and set up the bookkeeping; ``p.m`` (1 without an ``m`` parameter)
        arms to identify, ``p.max_samples`` (None: ``DEFAULT_MAX_SAMPLES``) the cap."""
        self.X = check_features(features)
        self.K, self.d = self.X.shape
        if self.K < 2:
            raise ValueError(
                f"features have {self.K} arm; identifying the best arm needs at least 2 arms to choose between"
            )
        m = int(getattr(p, "m", 1))
        if not 1 <= m < self.K:
            raise ValueError(f"m (number of arms to identify) must satisfy 1 <= m < K = {self.K}; got m = {m}")
        self.m = m
        self.max_samples = DEFAULT_MAX_SAMPLES if p.max_samples is None else int(p.max_samples)
        self.rng = as_generator(p.rng)
        self.stopping_rule = None
        self.n = np.zeros(self.K, dtype=np.int64)
        self.sums = np.zeros(self.K)
        self.n_samples = 0
        self._queue = NO_ARMS  # arms chosen and not yet handed out: cancelled ones, then the rest of a batch
        self._batch_rest = 0  # how many of the queued arms are the rest of the last ``_select`` batch
        self._asked: np.ndarray | None = None  # the last ask(), while its outcomes are awaited
        self._flight: np.ndarray | None = None  # per-arm count of proposed arms without outcome
        self._n_flight = 0
        self._finished = False
        self._stopped = False
        self.diagnostics: dict[str, Any] = {}

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _select(self):
        """The next arm(s) (int or int array), None to stop, or an empty array to wait.

        Decides from recorded outcomes only; arms in flight may count in the design.
        """

    @abstractmethod
    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Record outcomes (``n``, ``sums`` and ``n_samples`` are already updated)."""

    def _recommend(self, rng: np.random.Generator):
        """Default: the m arms with the highest empirical mean (unpulled arms last).

        Must not change the policy: ties are broken with ``rng``, a copy of the policy's generator.
        """
        means = np.where(self.n > 0, self.sums / np.maximum(self.n, 1), -np.inf)
        return top_m(means, self.m, rng)

    def _stopping_rule(self, p) -> StoppingRule | None:
        """The stopping rule this algorithm declares (parts.py), built from its parameters ``p`` by its
        ``_setup`` and stored (attached) as ``stopping_rule``. Default: none (fixed budgets)."""
        return None

    def _stops_now(self) -> bool:
        """Whether the stopping rule fires on the recorded outcomes; asked after a ``tell`` while
        chosen arms still wait in the queue (plates), so that ``done`` follows every outcome.
        Default: no rule outside ``_select`` (fixed budgets, phases that end with their last outcome)."""
        return False

    def _diagnostics(self) -> dict[str, Any]:
        """The diagnostics reported by ``result()`` (a copy; override to add derived values)."""
        return dict(self.diagnostics)

    def _certified_epsilon(self) -> np.ndarray | None:
        """Per arm of the current answer (``_current_answer()``, in its order), the smallest
        epsilon >= 0 for which it is certified epsilon-good at level ``delta`` by the policy's
        confidence set, from recorded outcomes only (certainty/certificate.py, eq. (1)); inf where
        nothing is certified yet. From the stopping rule (``stopping_rule.certified_epsilon``; parts.py),
        the set it stops on, valid at all times at once, so the certificate can be read after any
        outcome. None: no stopping rule (fixed-budget algorithms), or the set says nothing yet.
        """
        rule = self.stopping_rule
        return None if rule is None else rule.certified_epsilon(self._current_answer())

    def stopping_threshold(self, t: float, delta: float) -> float | None:
        """beta(t, delta): the evidence (in nats) this stopping rule needs after t tests at level
        delta, so that a run sampling in proportions w stops near t = T(w) beta(t, delta); what
        certainty/forecast.py solves for a forecast (``stopping_rule.threshold``). None: the algorithm
        states no threshold (a fixed budget, or a rule without one), and no forecast is made."""
        rule = self.stopping_rule
        return None if rule is None else rule.threshold(t, delta)

    def stopping_shortcut(self, answer, means, done: float, plate: int | None = None,
                          rng: np.random.Generator | None = None) -> float:
        """Tests in all after which the stopping rule's second route (one ``stopping_threshold`` does not
        describe: log-tas's own wells) would stop on ``answer`` with arm means ``means``, ``done`` tests
        made, in plates of ``plate`` tests (None: one at a time); inf when it has none
        (``StoppingRule.shortcut_tests``). ``rng``: one draw of the route, its outcomes drawn at ``means``."""
        rule = self.stopping_rule
        if rule is None:
            return math.inf
        return rule.shortcut_tests(np.asarray(answer), np.asarray(means), done, plate, rng)

    def _certificate_model(self) -> tuple[str, tuple[str, ...]]:
        """(the model the certificate holds under, in words with its assumed constants; caveats
        that void the guarantee beyond the parameters declared without one in ``params.py``): the
        stopping rule's ``model()``, or by default the model the policy's flags describe."""
        described = None if self.stopping_rule is None else self.stopping_rule.model()
        return self._model_description() if described is None else described

    def _model_description(self) -> tuple[str, tuple[str, ...]]:
        """The model the policy's flags describe (features or not, 0/1 outcomes, ``sigma``), no caveat:
        the certificate's model unless the stopping rule says more (``StoppingRule.model``)."""
        if not self.models_features:
            return ("independent arms (no model of the features)" if not self.binary_rewards
                    else "independent arms with 0/1 outcomes (no model of the features)"), ()
        if self.binary_rewards:
            return "the logistic model on these features", ()
        sigma = getattr(self, "sigma", None)
        noise = "" if sigma is None else f", noise sub-Gaussian with scale sigma = {float(sigma):g}"
        return f"the linear-Gaussian model on these features{noise}", ()

    def _current_answer(self) -> np.ndarray:
        """The answer ``result()`` recommends now (its ties broken by a copy of the generator)."""
        return np.atleast_1d(np.asarray(self._recommend(copy.deepcopy(self.rng)))).astype(np.int64)

    def certificate(self):
        """The anytime certificate of the current answer (a ``Certificate``, see
        screenbai/bandits/certainty/certificate.py), or None without a valid confidence set.
        Changes nothing in the policy (the value is cached until the next outcome)."""
        # here, not at the top: the certainty package loads complexity.py and scipy.special, which
        # `import screenbai.bandits` (every command's start) does without
        from screenbai.bandits.certainty.certificate import VACUOUS_HIT_RATE_GAP, Certificate

        answer = self._current_answer()
        key = (int(self.n_samples), bool(self._finished), tuple(answer.tolist()))
        cached = self.__dict__.get("_certificate_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        eps = self._certified_epsilon()
        cert = None
        if eps is not None:
            eps = np.asarray(eps, dtype=float).reshape(-1)
            if eps.shape != answer.shape:
                raise RuntimeError(f"{self.name}: _certified_epsilon gave {eps.size} value(s) for an answer of "
                                   f"{answer.size} arm(s)")
            if np.isnan(eps).any() or (eps < 0).any():
                raise RuntimeError(f"{self.name}: _certified_epsilon gave {eps.tolist()}; expected values >= 0")
            if self.binary_rewards:  # means in [0, 1]: no gap exceeds 1
                eps = np.minimum(eps, 1.0)
            delta = getattr(self, "delta", None)
            if delta is None:
                raise RuntimeError(f"{self.name} certifies an answer but has no confidence level delta")
            model, caveats = self._certificate_model()
            declared = tuple(f"{s} has no proven guarantee" for s in without_guarantee(type(self), self._init_kwargs))
            caveats = declared + tuple(caveats)
            cert = Certificate(
                arms=tuple(int(a) for a in answer), epsilon=tuple(float(e) for e in eps),
                delta=float(delta), guaranteed=not caveats, model=model, m=int(answer.size),
                n_samples=int(self.n_samples), quantity="cure rate" if self.binary_rewards else "mean outcome",
                caveats=caveats, vacuous_at=VACUOUS_HIT_RATE_GAP if self.binary_rewards else math.inf,
            )
        self.__dict__["_certificate_cache"] = (key, cert)
        return cert

    # ------------------------------------------------------------------ sequential protocol
    @property
    def done(self) -> bool:
        """True once the stopping rule has fired or the budget is spent (pure bookkeeping)."""
        return self._finished

    def ask(self) -> np.ndarray:
        """The arm(s) to test next (the policy's natural batch), as a 1-D array of arm indices.

        ``tell`` must then report exactly these arms. With plates in flight, ``ask()`` is
        ``propose()``.
        """
        if self._asked is not None:
            return self._asked
        if self._n_flight:
            return self.propose()
        if self._finished:
            raise RuntimeError(f"{self.name} has finished after {self.n_samples} samples; call result()")
        if not self._queue.size:
            self._advance()
            if self._finished:
                raise RuntimeError(f"{self.name} has finished after {self.n_samples} samples; call result()")
            if not self._queue.size:
                raise RuntimeError(f"{self.name} has nothing to propose although no test is in flight")
        self._asked, self._queue, self._batch_rest = self._queue, NO_ARMS, 0
        return self._asked

    def tell(self, arms, rewards) -> None:
        """Record outcomes: exactly the arms of the last ``ask()``, or any part of the proposed arms."""
        asked = self._asked
        arms = np.asarray(arms).reshape(-1)
        rewards = np.asarray(rewards, dtype=float).reshape(-1)
        if asked is not None:
            if arms.shape != asked.shape or (arms != asked).any():
                raise ValueError(
                    f"rewards were given for arms {arms.tolist()}, but the arms asked were {asked.tolist()}"
                )
            arms = asked  # the same indices, as integers (they may come back as floats, e.g. from a table)
        elif not self._n_flight:
            raise RuntimeError("tell() called without arms in flight; call ask() or propose() first")
        else:
            arms = self._check_in_flight(arms, "tell")
        if self._finished:
            raise RuntimeError(
                f"{self.name} has finished after {self.n_samples} samples; its answer no longer changes. "
                "cancel() the arms still in flight instead of telling their outcomes"
            )
        if rewards.shape != arms.shape:
            raise ValueError(f"got {rewards.size} reward(s) for {arms.size} arm(s); give one reward per arm")
        if arms.size == 1:  # the hot path of sequential policies: plain float checks
            r = float(rewards[0])
            if not math.isfinite(r) or (self.binary_rewards and r != 0.0 and r != 1.0):
                self._reject_rewards(rewards)
        elif not np.isfinite(rewards).all() or (
            self.binary_rewards and not ((rewards == 0.0) | (rewards == 1.0)).all()
        ):
            self._reject_rewards(rewards)
        if asked is not None:
            self._asked = None
        else:
            self._land(arms)
        if arms.size == 1:
            a = arms[0]
            self.n[a] += 1
            self.sums[a] += rewards[0]
        else:
            np.add.at(self.n, arms, 1)
            np.add.at(self.sums, arms, rewards)
        self.n_samples += arms.size
        self._update(arms, rewards)
        if not self._queue.size:
            self._advance()
        elif not self._batch_rest and self._stops_now():  # cancelled arms queued: the rule on the new outcomes
            self._finish(True)

    def _reject_rewards(self, rewards: np.ndarray):
        if not np.isfinite(rewards).all():
            raise ValueError(f"rewards must be finite numbers; got {rewards.tolist()}")
        raise ValueError(
            f"{self.name} models binary (Bernoulli) outcomes; rewards must be 0 or 1, got {rewards.tolist()}"
        )

    def result(self) -> Result:
        """The current recommendation and cost; changes nothing in the policy.

        Once the run has finished (stopped, budget spent or capped), ``diagnostics`` holds
        ``certified_epsilon``: per arm of the recommendation, the epsilon it is certified to be
        epsilon-good at (``certificate()``; absent for policies without a valid confidence set).
        While the run goes on, call ``certificate()`` (the likelihood-ratio set makes it cost some
        Newton solves, not wanted at every ``result()``).
        """
        diagnostics = self._diagnostics()
        if self._finished:
            cert = self.certificate()
            if cert is not None:
                diagnostics["certified_epsilon"] = list(cert.epsilon)
        return Result(
            recommendation=tuple(int(a) for a in self._current_answer()),
            n_samples=int(self.n_samples),
            pulls=self.n.copy(),
            stopped=bool(self._stopped),
            diagnostics=diagnostics,
        )

    def run(self, env) -> Result:
        """Drive the policy to completion against a simulated environment (``env.pull(arms)``).

        The hook for a vectorised path: an algorithm may override it to return the same result
        as this loop faster, using only public methods of ``env`` (and falling back to this loop).
        """
        while not self._finished:
            arms = self.ask()
            self.tell(arms, env.pull(arms))
        return self.result()

    # ------------------------------------------------------------------ plates
    @property
    def n_in_flight(self) -> int:
        """Number of tests proposed (or asked) whose outcome is not recorded yet."""
        return self._n_flight + (0 if self._asked is None else self._asked.size)

    @property
    def in_flight(self) -> np.ndarray:
        """Per-arm count of the tests in flight (length K)."""
        counts = np.zeros(self.K, dtype=np.int64) if self._flight is None else self._flight.copy()
        if self._asked is not None:
            np.add.at(counts, self._asked, 1)
        return counts

    def propose(self, n: int | None = None) -> np.ndarray:
        """Up to n arms to test (a plate; repeats allowed), marked in flight.

        n = None proposes the natural batch (what ``ask()`` returns). An empty array means nothing
        can be proposed until outcomes in flight are recorded. Raises once the policy is done.
        """
        if n is not None:
            if int(n) != n or int(n) < 1:
                raise ValueError(f"propose(n) needs a positive whole number of arms; got {n!r}")
            n = int(n)
        if self._finished:
            raise RuntimeError(f"{self.name} has finished after {self.n_samples} samples; call result()")
        if self._asked is not None:  # an ask() left unanswered joins the plates in flight
            self._fly(self._asked)
            self._asked = None
        parts, got = [], 0
        while n is None or got < n:
            if not self._queue.size:
                if n is None and got:
                    break
                self._advance()
                if self._finished or not self._queue.size:
                    break
            q = self._queue
            k = q.size if n is None else min(q.size, n - got)
            part, self._queue = q[:k].copy(), q[k:]
            self._batch_rest = min(self._batch_rest, self._queue.size)
            self._fly(part)
            parts.append(part)
            got += k
            if n is None:
                break
        return np.concatenate(parts) if parts else NO_ARMS.copy()

    def recheck(self) -> None:
        """Run the stopping rule on the recorded outcomes now, even while the rest of a chosen batch
        waits in the queue (``tell`` runs it when the queue is empty or holds only cancelled arms, so
        that ``propose(1)`` + ``tell`` gives the sequential choices).  A campaign calls it after each
        results file: ``done`` and the leader then follow every recorded outcome, whatever plates are
        still in the lab."""
        if not self._finished and self._queue.size and self._stops_now():
            self._finish(True)

    def cancel(self, arms) -> None:
        """Take arms in flight back without an outcome (failed wells); they are proposed again first."""
        if self._asked is not None:
            self._fly(self._asked)
            self._asked = None
        arms = self._check_in_flight(np.asarray(arms).reshape(-1), "cancel")
        self._land(arms)
        if not self._finished:
            self._queue = np.concatenate([arms, self._queue])

    def _fly(self, arms: np.ndarray) -> None:
        if self._flight is None:
            self._flight = np.zeros(self.K, dtype=np.int64)
        np.add.at(self._flight, arms, 1)
        self._n_flight += arms.size

    def _land(self, arms: np.ndarray) -> None:
        assert self._flight is not None  # arms were checked to be in flight
        np.subtract.at(self._flight, arms, 1)
        self._n_flight -= arms.size

    def _check_in_flight(self, arms: np.ndarray, verb: str) -> np.ndarray:
        if arms.size and not np.issubdtype(arms.dtype, np.integer):
            as_int = arms.astype(np.int64) if np.issubdtype(arms.dtype, np.number) else None
            if as_int is None or (as_int != arms).any():
                raise ValueError(f"{verb}(): arms must be whole arm indices; got {arms.tolist()}")
            arms = as_int
        arms = arms.astype(np.int64, copy=False)
        if arms.size and (arms.min() < 0 or arms.max() >= self.K):
            raise ValueError(f"{verb}(): arm indices must lie in 0..{self.K - 1}; got {arms.tolist()}")
        flight = self._flight if self._flight is not None else np.zeros(self.K, dtype=np.int64)
        uniq, counts = np.unique(arms, return_counts=True)
        short = counts > flight[uniq]
        if short.any():
            a = int(uniq[short][0])
            raise ValueError(
                f"{verb}(): arm {a} appears {int(counts[short][0])} time(s) but only {int(flight[a])} test(s) of it "
                "are in flight; report only arms returned by propose()/ask() and not yet told or cancelled"
            )
        return arms

    # ------------------------------------------------------------------ internals
    def _advance(self) -> None:
        """Make the next choice (or finish): called when nothing is queued."""
        if self._finished:
            return
        if self.n_samples + self._n_flight >= self.max_samples:
            if not self._n_flight:
                self._finished = True
            return
        arms = self._select()
        if arms is None:
            self._finished = self._stopped = True
            self._queue = NO_ARMS
        else:
            self._queue = np.asarray(arms, dtype=np.int64).reshape(-1)
            self._batch_rest = self._queue.size

    def _finish(self, stopped: bool) -> None:
        """End the run (for vectorised ``run`` paths that record their outcomes in bulk)."""
        self._finished, self._stopped = True, bool(stopped)
        self._queue, self._asked, self._batch_rest = NO_ARMS, None, 0

    # ------------------------------------------------------------------ state
    def _state_names(self) -> list[str]:
        names: list[str] = []
        for klass in reversed(type(self).__mro__):
            for name in (*klass.__dict__.get("__state__", ()), *klass.__dict__.get("_state_attrs", ())):
                if name not in names:
                    names.append(name)
        return names

    def state_dict(self) -> dict:
        """The whole state as plain data (numpy arrays, numbers, strings, lists, dicts)."""
        return {
            "algorithm": type(self).__name__,
            "K": self.K,
            "d": self.d,
            "m": self.m,
            "n": self.n.copy(),
            "sums": self.sums.copy(),
            "n_samples": int(self.n_samples),
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            "queue": self._queue.copy(),
            "batch_rest": int(self._batch_rest),
            "asked": None if self._asked is None else self._asked.copy(),
            "in_flight": None if self._flight is None else self._flight.copy(),
            "finished": bool(self._finished),
            "stopped": bool(self._stopped),
            "diagnostics": encode_state(self.diagnostics),
            "algorithm_state": {name: encode_state(getattr(self, name)) for name in self._state_names()},
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a state written by ``state_dict`` of a policy with the same features and parameters."""
        want = (type(self).__name__, self.K, self.d, self.m)
        got = (state.get("algorithm"), state.get("K"), state.get("d"), state.get("m"))
        if got != want:
            raise ValueError(
                f"this state belongs to {got[0]} with K = {got[1]}, d = {got[2]}, m = {got[3]}; the policy is "
                f"{want[0]} with K = {want[1]}, d = {want[2]}, m = {want[3]}: "
                "build it with the same features and parameters"
            )
        names = self._state_names()
        if set(state["algorithm_state"]) != set(names):
            unknown = sorted(set(state["algorithm_state"]) - set(names))
            missing = sorted(set(names) - set(state["algorithm_state"]))
            raise StateVersionError(
                f"this state of {want[0]} was written by another version of it (fields this version does not keep: "
                f"{unknown or 'none'}; fields it lacks: {missing or 'none'}); rebuild it from its outcomes "
                "(a campaign: `screenbai campaign repair FILE` replays its log)"
            )
        self.n = np.array(state["n"], dtype=np.int64)
        self.sums = np.array(state["sums"], dtype=float)
        self.n_samples = int(state["n_samples"])
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self._queue = np.array(state["queue"], dtype=np.int64).reshape(-1)
        self._batch_rest = int(state["batch_rest"])
        self._asked = None if state["asked"] is None else np.array(state["asked"], dtype=np.int64).reshape(-1)
        self._flight = None if state["in_flight"] is None else np.array(state["in_flight"], dtype=np.int64)
        self._n_flight = 0 if self._flight is None else int(self._flight.sum())
        self._finished, self._stopped = bool(state["finished"]), bool(state["stopped"])
        self.diagnostics = decode_state(state["diagnostics"])
        for name, value in state["algorithm_state"].items():
            setattr(self, name, decode_state(value, getattr(self, name, None)))
        self._after_load()

    def _after_load(self) -> None:
        """Reset caches derived from the state (they are rebuilt lazily)."""
