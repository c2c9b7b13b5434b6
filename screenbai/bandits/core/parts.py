"""The parts of a fixed-confidence algorithm: a sampling rule, a stopping rule, a recommendation.

A policy (policy.py) is the sampling rule (``_select``: which arm next) and the recommendation
(``_recommend``: the answer now); its stopping rule is a ``StoppingRule`` object, ``policy.stopping_rule``,
that the policy builds in ``_setup`` and that is saved with the policy's state. From it the
``Policy`` base derives, once for every algorithm, the anytime certificate (``certificate()``,
certainty/certificate.py), the model the certificate holds under and the threshold a forecast
solves for (``stopping_threshold``).

The sampling rule and the recommendation stay the policy's own methods: they share its estimates
and its bookkeeping of plates, so a policy class is a sampling rule with a recommendation; one whose
sampling works with any valid stopping rule of its model declares ``foreign_stopping_rules = True`` and
takes its rule from ``_stopping_rule(p)``.

A stopping rule is a confidence set valid at all times at once and the test on it:

* it reads the owner's recorded outcomes (``policy.n``, ``policy.sums``, ``policy.Z``, or the
  policy's estimator) and absorbs what it keeps itself through ``observe(arms, rewards)`` (every
  recorded outcome, told in the order recorded) and ``block_closed(counts, sums)`` (a block of tests
  whose design was fixed before its outcomes, for rules that only use such blocks);
* ``stops(answer)``: whether the set certifies ``answer`` epsilon-good at level delta now;
  ``check()``: the rule's own candidate answer (``candidate()``) when it stops, else None;
* ``certified_epsilon(answer)``: per arm of the answer, the smallest epsilon the set certifies
  (certainty/certificate.py, eq. (1); inf where nothing is certified yet; None while the set says
  nothing at all);
* ``threshold(t, delta)``: the evidence (nats) the rule needs after t tests at level delta, for a
  forecast (None: no such threshold);
* ``model()``: the model the certificate holds under and its caveats (None: the policy's default).

The default ``stops`` is the certificate itself: stop when every arm of the answer is certified
epsilon-good. It is valid for any set that holds at all times at once (the statement it certifies
is the one a wrong answer would violate), so a sampling rule may be run with any valid rule of its
model (``screenbai.bandits.rules.compose.with_stopping``). A rule may test more cheaply (a LUCB
statistic, a block e-value), and a policy's sampling may evaluate the rule's statistic in its own
pass over the arms (GIFA's round): the rule is the same, computed once.

State. ``state_fields`` names the attributes that change during a run; ``state_dict`` returns them
(objects with their own ``state_dict`` included, encoded by ``state.encode_state`` with the policy's
state) and ``load_state_dict`` restores them; everything else is rebuilt from the parameters, and
caches are dropped by ``reset_caches`` after a restore. No solver object is part of the state, so a
policy with its rule pickles and deep-copies.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np


class StoppingRule:
    """A confidence set valid at all times at once, and the stopping test on it (see the module docstring).

    ``epsilon``: the slack of the answer (an arm within epsilon of the m-th best counts as correct);
    ``delta``: the level. ``policy`` is the owner, set by ``attach`` (the policy's ``_setup``).
    """

    #: attributes that change during a run (saved with the policy's state)
    state_fields: ClassVar[tuple[str, ...]] = ()
    #: a short name for diagnostics and messages
    name: ClassVar[str] = "stopping rule"
    #: whether the rule has a second route from a compound's own wells (log-tas's rules/own_wells.py), whose
    #: count starts again at a compound change: status names the route, a change says it counts afresh
    #: (``own_wells_route``). Declared, not read off an override of ``shortcut_tests``, which any rule may forecast.
    own_wells_route: ClassVar[bool] = False

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.policy: Any = None

    def attach(self, policy) -> StoppingRule:
        """Bind the rule to the policy whose outcomes it reads; returns the rule."""
        self.policy = policy
        return self

    # ------------------------------------------------------------------ outcomes
    def observe(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Absorb recorded outcomes (after the policy's counts and sums include them). Default: nothing
        (the rule reads the policy's counts, sums or estimator)."""

    def block_closed(self, counts: np.ndarray, sums: np.ndarray) -> None:
        """A block of tests whose design was fixed before its outcomes is complete (per-arm counts and
        outcome sums). Default: nothing (the rule uses every outcome)."""

    # ------------------------------------------------------------------ the test and the certificate
    def candidate(self) -> np.ndarray:
        """The answer the rule tests in ``check`` (default: the policy's current answer)."""
        return self.policy._current_answer()

    def check(self) -> np.ndarray | None:
        """The candidate answer when the rule stops on it now, else None."""
        answer = self.candidate()
        return answer if self.stops(answer) else None

    def stops(self, answer: np.ndarray) -> bool:
        """Whether every arm of ``answer`` is certified epsilon-good at level delta now. Default: from
        ``certified_epsilon`` (valid for any set that holds at all times at once)."""
        eps = self.certified_epsilon(np.asarray(answer))
        return eps is not None and bool((np.asarray(eps) <= self.epsilon).all())

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        """Per arm of ``answer``, the smallest epsilon >= 0 for which the set certifies it epsilon-good
        (inf: nothing certified yet); None while the set says nothing at all."""
        raise NotImplementedError(f"{type(self).__name__} does not compute a certificate")

    def threshold(self, t: float, delta: float) -> float | None:
        """beta(t, delta), the evidence in nats the rule needs after t tests at level delta (forecasts);
        None: the rule states no such threshold."""
        return None

    def shortcut_tests(self, answer: np.ndarray, means: np.ndarray, done: float, plate: int | None = None,
                       rng: np.random.Generator | None = None) -> float:
        """Tests in all after which a second route of the rule, one its ``threshold`` does not describe,
        would stop on ``answer`` if its arms' means were ``means`` and ``done`` tests were made so far;
        inf when the rule has none (the default). Forecasts take the smaller of the two routes. ``plate``:
        the tests per plate where a campaign plans and reads whole plates (None: one test at a time). ``rng``:
        one draw of the route with its outcomes drawn at ``means`` (a forecast's band), where the rule draws
        them; else the expected route."""
        return math.inf

    def model(self) -> tuple[str, tuple[str, ...]] | None:
        """(the model the certificate holds under, caveats), or None for the policy's default."""
        return None

    def diagnostics(self) -> dict[str, Any]:
        """Extras the policy's ``result()`` reports (default none)."""
        return {}

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The attributes of ``state_fields`` (encoded with the policy's state, state.encode_state)."""
        return {name: getattr(self, name) for name in self.state_fields}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the attributes of ``state_dict`` (decoded by state.decode_state), then ``reset_caches``."""
        for name, value in state.items():
            if name not in self.state_fields:
                raise ValueError(f"{type(self).__name__} has no state field {name!r}; was the policy built with "
                                 "the same parameters?")
            setattr(self, name, value)
        self.reset_caches()

    def reset_caches(self) -> None:
        """Drop values derived from the state (rebuilt lazily)."""


def own_wells_route(policy) -> bool:
    """Whether ``policy``'s stopping rule (a wrapper's inner policy's) declares a route from a compound's own wells
    (``StoppingRule.own_wells_route``)."""
    rule = getattr(getattr(policy, "inner", policy), "stopping_rule", None)
    return bool(getattr(rule, "own_wells_route", False))
