"""[SLM14] static allocations for linear best-arm identification, and the parameters and stopping tests
shared with the phased ones (``static_adaptive``).

Registered policies:

* ``"g-allocation"``     greedy G-optimal static allocation, stopping rule eq. 11;
* ``"xy-static"``        greedy XY static allocation, stopping rule eq. 11;
* ``"xy-oracle"``        greedy oracle allocation with theta*, stopping eq. 4 (default) or eq. 11;
* in ``static_adaptive``: ``"xy-adaptive"`` (phased XY allocation) and ``"xy-fully-adaptive"`` ([SLM14] Fig. 4).

Implementation notes.

* The greedy step and the reward-independent sequences it generates (cached, so that Monte-Carlo
  replications share them; tie-breaks use ``allocation_seed``, not the policy ``rng``) are in
  ``static_greedy``; the confidence widths and the stopping rule eq. 11, in ``static_rules``.
* ``run(env)`` (the ``Policy.run`` hook, used by ``runner.run``) pulls blocks of 4096 rounds with
  ``env.pull_sequence`` (the same draws as pulling one arm at a time) and tests eq. 11 at every data state
  of the block, from cumulative per-arm counts and sums, in chunks whose arrays stay under
  ``static_rules.FAST_PATH_MAX_BYTES``: it returns the same stopping time and recommendation as the
  round-by-round ask/tell path.
* Plates: a static sequence is handed out in order (a cancelled arm first again); the stopping rule
  only uses recorded outcomes. XY-adaptive waits for a phase's last outcome before ending it; the
  adaptive choices (restricted xy-static, xy-fully-adaptive) count the tests in flight in their design.
"""

from __future__ import annotations

import logging

import numpy as np

from screenbai.bandits.core.params import (
    ALLOCATION_SEED,
    BOOLEAN,
    DELTA,
    SIGMA,
    Anything,
    Interval,
    Options,
    like,
    param,
    run_state,
)
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import NO_ARMS, Policy, Result
from screenbai.bandits.core.registry import register
from screenbai.bandits.core.state import decode_state, encode_state
from screenbai.bandits.linear.static_greedy import (
    TIE_RTOL,
    AllocationSequence,
    GreedyState,
    all_pairs,
    allocation_sequence,
    star_pairs,
)
from screenbai.bandits.linear.static_rules import (
    CONFIDENCES,
    OLSRule,
    OLSTracker,
    first_eq11_stop,
    ols_mu,
)
from screenbai.bandits.numerics.linalg import project_if_deficient, refuse_quadratic, spanning_arms
from screenbai.bandits.numerics.ties import argmax_random

__all__ = ["GAllocation", "SLMBase", "XYOracle", "XYStatic"]

log = logging.getLogger(__name__)

PULL_BLOCK = 4096  # rounds pulled at once by the vectorised ``run`` (= the Environment noise buffer)
AUTO_RESTRICT_K = 200  # above this many arms, Y is restricted to pairs with the empirical best
RESTRICT_Y = param(
    None, BOOLEAN, f"restrict Y to pairs with the empirical best (None: above {AUTO_RESTRICT_K} arms)", none=True
)
MONOTONE = param(False, BOOLEAN, "survivors only shrink (False: rebuilt from all arms, as in [SLM14])")


# ====================================================================== common base
class SLMBase(Policy):
    """Shared parameters and projection onto the span of the arms."""

    delta: float = DELTA
    sigma: float = SIGMA
    confidence: str = param(
        "pairs", Options(CONFIDENCES), "log_n(K^2/delta) (pairs, as in [SLM14]) or log_n(K/delta)"
    )
    _final: dict | None = run_state()  # the end of a vectorised run
    _handed: int = run_state()  # positions of the arm sequence chosen so far (= n_samples without plates)

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.delta = p.delta
        self.confidence = p.confidence
        self.sigma = p.sigma
        self.width_constant = 2.0 * np.sqrt(2.0) * p.sigma  # [SLM14]'s c: widths are c ||y||_{A^-1} sqrt(log term)
        #: (c, K, delta, confidence): the arguments of the widths and stopping rules of ``static_rules``
        self.rule_args = (self.width_constant, self.K, self.delta, self.confidence)
        refuse_quadratic(self.name, self.K, "the Gram matrix Z A^-1 Z^T of its allocation",
                         "m-LinGapE or LinGapE (O(K d) per round)")
        self.Z, self.basis = project_if_deficient(self.X)
        self.d_eff = self.Z.shape[1]
        self.init_arms = spanning_arms(self.Z)
        self._final = None
        self._handed = 0
        self.stopping_rule = self._stopping_rule(p).attach(self)

    def _stopping_rule(self, p) -> StoppingRule:
        """[SLM14] Prop. 1's set on the design's outcomes (static_rules.OLSRule), what eq. 11 tests."""
        return OLSRule(self.Z, self.rule_args)

    def _design_outcomes(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(per-arm counts, sums, observations) of the fixed design the eq. 11 set rests on: every outcome."""
        return self.n, self.sums, self.n_samples

    def _ols_best(self, counts, sums, rng) -> np.ndarray:
        """The arm with the best OLS estimate from these counts and sums (empirical best while the
        pulled arms do not span)."""
        mu, _ = ols_mu(self.Z, counts, sums)
        if mu is None:
            return Policy._recommend(self, rng)
        return np.array([argmax_random(mu, rng)])

    @staticmethod
    def _check_restrict(restrict_y, K: int) -> bool:
        if restrict_y is None:
            if K > AUTO_RESTRICT_K:
                log.warning(
                    "K = %d > %d arms: restricting Y to pairs with the empirical best arm "
                    "(an approximation); pass restrict_y=False to keep all pairs", K, AUTO_RESTRICT_K
                )
                return True
            return False
        return bool(restrict_y)

    def _fast_path_applies(self, env) -> bool:
        """A vectorised ``run`` starts from a fresh policy and needs ``env.pull_sequence``."""
        return self.n_samples == 0 and not self.n_in_flight and hasattr(env, "pull_sequence")

    def _record_run(self, counts, sums, n: int, stopped: bool, best: int | None) -> Result:
        """Put the policy in the state a round-by-round run would end in (vectorised paths)."""
        self.n = np.asarray(counts, dtype=np.int64).copy()
        self.sums = np.asarray(sums, dtype=float).copy()
        self.n_samples = self._handed = int(n)
        self._final = {"best": best}
        self._finish(stopped)
        return self.result()

    @classmethod
    def resolve_oracle(cls, key, instance):
        if key == "theta":
            if instance.theta is not None:
                return instance.theta
            return np.linalg.lstsq(instance.features, instance.means, rcond=None)[0]
        if key == "S":
            theta = cls.resolve_oracle("theta", instance)
            return float(np.linalg.norm(theta))
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")


# ====================================================================== static allocations
class _StaticAllocation(SLMBase):
    """Precomputed greedy sequence + the eq. 11 stopping rule tested every round."""

    #: None: drawn from rng (the attribute holds the seed used, saved with the state)
    allocation_seed: int | None = like(ALLOCATION_SEED, state=True)
    _ols: OLSTracker = run_state()
    _ols_ready: bool = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        seed = p.allocation_seed
        self.allocation_seed = int(self.rng.integers(2**63)) if seed is None else seed
        self._ols = OLSTracker(self.Z)
        self._ols_ready = False
        self._seq: AllocationSequence | None = None

    def _after_load(self) -> None:
        self._seq = None  # rebuilt (shared through the cache) on first use

    # -- to implement
    def _make_sequence(self) -> AllocationSequence:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stops_eq4(self) -> bool:
        return False

    @property
    def sequence(self) -> AllocationSequence:
        if self._seq is None:
            self._seq = self._make_sequence()
        return self._seq

    # -- round-by-round path
    def _select(self):
        s, t = self.n_samples, self._handed
        seq = self.sequence
        if self._stops_eq4():
            if s >= self.init_arms.size and seq.done and t >= seq.length:
                return NO_ARMS if self.n_in_flight else None
        elif self._stops_now():
            return None
        if t >= seq.length:
            seq.extend(min(self.max_samples, max(t + 1, 2 * seq.length, t + PULL_BLOCK)))
        if t >= seq.length:  # a finite sequence ran out without stopping: cannot happen for eq. 4
            return NO_ARMS if self.n_in_flight else None
        self._handed = t + 1
        return int(seq.arms[t])

    def _update(self, arms, rewards):
        for a, r in zip(arms, rewards):
            self._ols.add(int(a), float(r))

    def _stops_now(self) -> bool:
        """eq. 11 on recorded outcomes (eq. 4 ends with its sequence, in ``_select``)."""
        s = self.n_samples
        if s < self.init_arms.size or self._stops_eq4():
            return False
        if not self._ols_ready:
            self._ols_ready = self._ols.refresh()
        return self._ols_ready and self._ols.eq11(s, *self.rule_args)[0]

    def _recommend(self, rng):
        if self._final is not None and self._final.get("best") is not None:
            return np.array([self._final["best"]])
        return self._ols_best(self.n.astype(float), self.sums, rng)

    # -- vectorised path
    def run(self, env):
        """Same stopping time and recommendation as the ask/tell loop: the sequence pulled in blocks of
        ``PULL_BLOCK``, eq. 11 tested at every data state (``first_eq11_stop``, memory under its cap)."""
        if not self._fast_path_applies(env):
            return super().run(env)
        seq = self.sequence
        n0, cap = self.init_arms.size, self.max_samples
        counts = np.zeros(self.K)
        sums = np.zeros(self.K)
        t = 0
        while t < cap:
            t1 = min((t // PULL_BLOCK + 1) * PULL_BLOCK, cap)
            seq.extend(t1)
            t1 = min(t1, seq.length)
            if t1 <= t:  # finite (eq. 4) sequence exhausted
                break
            arms = seq.arms[t:t1].astype(np.int64)
            rewards = env.pull_sequence(arms)
            if self._stops_eq4():
                np.add.at(counts, arms, 1)
                np.add.at(sums, arms, rewards)
                if seq.done and t1 == seq.length and t1 < cap:
                    mu, _ = ols_mu(self.Z, counts, sums)
                    return self._record_run(counts, sums, t1, True, argmax_random(mu, self.rng))
            else:
                hit = first_eq11_stop(self.Z, counts, sums, arms, rewards, t, n0, cap, *self.rule_args)
                if hit is not None:
                    n, best, counts_n, sums_n = hit
                    return self._record_run(counts_n, sums_n, n, True, best)
            t = t1
        return self._record_run(counts, sums, t, False, None)


@register("g-allocation")
class GAllocation(_StaticAllocation):
    """[SLM14] greedy G-allocation: argmin_x max_x' ||x'||^2_{(A + x x^T)^{-1}}, stop by eq. 11.

    Parameters: delta, sigma (noise bound, c = 2 sqrt(2) sigma), confidence ("pairs": log_n(K^2/delta) as
    in [SLM14], default; "arms": log_n(K/delta), which reproduces [XHS18] Table 1's oracle exactly),
    allocation_seed (tie-breaks of the shared precomputed sequence; None draws one from rng), rng, max_samples.
    """

    name = "g-allocation"

    def _make_sequence(self):
        return allocation_sequence(self.Z, self.init_arms, np.arange(self.K), seed=self.allocation_seed)


@register("xy-static")
class XYStatic(_StaticAllocation):
    """[SLM14] greedy XY-static allocation: argmin_x max_{y in Y} ||y||^2_{(A+xx^T)^{-1}}, eq. 11.

    restrict_y: None (auto: True above K = 200, with a logged warning), True or False. When True,
    Y holds only the pairs with the current OLS empirical best arm; the allocation then depends on
    rewards (an approximation, no longer static) and is computed round by round (no fast path).
    """

    name = "xy-static"

    #: None: auto (the attribute holds the choice made)
    restrict_y: bool | None = RESTRICT_Y
    _live_best: int = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.restrict_y = self._check_restrict(p.restrict_y, self.K)
        self._live: GreedyState | None = None
        self._live_best = -1
        self.diagnostics["restricted_y"] = self.restrict_y

    def _make_sequence(self):
        I, J = all_pairs(np.ones(self.K, dtype=bool))
        return allocation_sequence(self.Z, self.init_arms, I, J, seed=self.allocation_seed)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["live"] = None if self._live is None else encode_state(self._live.state_dict())
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._live = None
        if state.get("live") is not None:
            self._live = GreedyState.from_state(self.Z, 0.0, decode_state(state["live"]))

    def _select(self):
        if not self.restrict_y:
            return super()._select()
        s, t = self.n_samples, self._handed
        if t < self.init_arms.size:
            self._handed = t + 1
            return int(self.init_arms[t])
        if s < self.init_arms.size:  # initial arms in flight: no estimate yet
            return NO_ARMS
        if not self._ols_ready:
            self._ols_ready = self._ols.refresh()
        ok, best, _ = self._ols.eq11(s, *self.rule_args)
        if ok:
            return None
        if self._live is None:
            self._live = GreedyState(self.Z, self.n)
        if best != self._live_best:
            self._live.set_directions(*star_pairs(np.ones(self.K, dtype=bool), best))
            self._live_best = best
        k = self._live.choose(self.rng)
        self._live.pull(k)  # the design counts the test from its choice on (a cancelled one is re-proposed)
        self._handed = t + 1
        return k

    def run(self, env):
        return Policy.run(self, env) if self.restrict_y else super().run(env)

    def _certificate_model(self) -> tuple[str, tuple[str, ...]]:
        model, caveats = super()._certificate_model()
        if self.restrict_y:
            return model, ("the directions follow the estimated best arm (restrict_y), so the design depends on "
                           "the outcomes while [SLM14] Prop. 1 assumes a fixed design",)
        return model, caveats


@register("xy-oracle", theta="oracle")
class XYOracle(_StaticAllocation):
    """[SLM14] XY-oracle allocation: greedy on max_{y in Y*} ||y||^2_{(A+xx^T)^{-1}} / Delta_y^2.

    theta: the true parameter theta* (length d; "oracle" resolves it from the instance).
    stopping: "eq4" (default, true gaps: deterministic stopping time) or "eq11" (empirical rule).
    tie_rtol: greedy scores within this relative distance of the best count as tied and are decided
    by the reduction of the directions at the maximum (our choice). Every y in Y* contains x*, so the literal
    one-step minimax keeps pulling x* (which lowers all tied directions by a vanishing amount) and never
    reaches eq. 4 (e.g. Soare d = 4, omega = 0.2); 1e-3 breaks that stall. Use 1e-10 for the literal rule.
    """

    name = "xy-oracle"

    theta: np.ndarray | None = param(
        None, Anything("a vector of length d"), "the true parameter theta*", none=True, oracle=True
    )
    stopping: str = param("eq4", Options(("eq4", "eq11")), "eq4 (true gaps) or eq11 (empirical)")
    tie_rtol: float = param(
        1e-3, Interval(0.0, 1.0, open=("high",)), "relative tolerance for near-ties of the greedy score"
    )

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        theta, stopping, tie_rtol = p.theta, p.stopping, p.tie_rtol
        if theta is None or isinstance(theta, str):
            raise ValueError(
                f"xy-oracle needs the true parameter theta (a length-{self.d} vector); got {theta!r}. "
                "In simulations pass theta='oracle' through policy_for_instance."
            )
        theta = np.asarray(theta, dtype=float).reshape(-1)
        if theta.size != self.d or not np.isfinite(theta).all():
            raise ValueError(f"theta must be a finite vector of length d = {self.d}; got shape {theta.shape}")
        self.theta = theta
        self.stopping = stopping
        self.tie_rtol = max(float(tie_rtol), TIE_RTOL)
        mu = self.X @ theta
        self.best_arm = int(mu.argmax())
        gaps = mu[self.best_arm] - mu
        others = np.flatnonzero(np.arange(self.K) != self.best_arm)
        if np.min(gaps[others]) <= 1e-12 * max(1.0, abs(mu).max()):
            tied = others[gaps[others] <= 1e-12 * max(1.0, abs(mu).max())]
            raise ValueError(f"theta gives arm(s) {tied.tolist()} the same mean as the best arm {self.best_arm}; "
                             "the oracle allocation needs a unique best arm (Delta_min > 0)")
        self._others, self._gaps = others, gaps[others]
        self.diagnostics["stopping"] = stopping

    def _stops_eq4(self) -> bool:
        return self.stopping == "eq4"

    def _make_sequence(self):
        rule = ("eq4", *self.rule_args) if self.stopping == "eq4" else None
        I = np.full(self._others.size, self.best_arm)
        return allocation_sequence(self.Z, self.init_arms, I, self._others, 1.0 / self._gaps,
                                   seed=self.allocation_seed, stop_rule=rule, tie_rtol=self.tie_rtol)
