"""KL-LUCB on each compound's own outcomes: no model of the features.

When the model check rejects a model (campaign status), a certificate that rests on it is unproven, and a
sampling rule that follows it starves the compounds it wrongly thinks weak. KL-LUCB (Kaufmann &
Kalyanakrishnan 2013, "Information complexity in bandit subset selection", COLT, Algorithm 1 with the
KL-LUCB confidence bounds) treats each compound on its own, so it needs only that a compound's 0/1 outcomes
are independent draws of its hit rate.

**The confidence bounds.** Per compound, the anytime interval of ``certainty/no_model.py``: the Jeffreys
mixture of Bernoulli likelihood ratios, a martingale under the true rate whatever chose the tests, with
Ville's inequality at level delta / K for each of the K compounds. Every rate lies in its interval at every
time at once with probability at least 1 - delta. They play the part of the paper's KL bounds, whose
exploration rate log(k1 K t^alpha / delta) they replace by a mixture's, valid at every time without a union
over t. The stop's correctness needs only bounds that hold at all times at once; the paper's bound on the
number of tests is proved for its own rate, not for this one (measured instead: docs/certificate.md).

**The sampling rule** (the paper's Algorithm 1). J(t), the m compounds of highest observed hit rate;
l_t, the one of J(t) with the lowest lower bound; u_t, the compound outside J(t) with the highest upper
bound (a compound never tested has [0, 1], so each is tested before the rule can stop). The paper tests
both; here the one of the two with the wider interval is tested (the "largest variance" selection of
Réda et al.'s GIFA, the LUCB default of ``linear/gifa.py``), because on a plate the paper's pair repeats the
leader in every second well before any outcome (a first plate of 40 on 40 untested compounds held 21 of them).
In simulations the two cost about the same (delta 0.05, epsilon 0.1, 100 runs on 40 compounds with rates from
Beta(1, 3): median 2 145 tests against the pair's 2 137 one test at a time, 2 496 against 2 688 in plates of 96,
means 6 % and 3 % higher; ten compounds at rates 0.7 to 0.1, epsilon 0, delta 0.1, 30 runs: 2 897 against
3 277; kw_synthetic d = 2: 21 480 against 21 688). With plates,
the tests in flight count as tests at the compound's observed rate (0.5 before any), which narrows its
interval but does not move it, so a plate spreads over the compounds the rule would pick next; they never
enter the stopping rule.

**The stopping rule** (``EachArmIntervals``): stop once every compound of J(t) is certified epsilon-good by
the intervals, eq. (1) of ``certainty/certificate.py`` with U(i, j) = hi_j - lo_i, the certificate of
``no_model.py``. It fires no later than the paper's test hi_{u_t} - lo_{l_t} <= epsilon (for top-m the m-th
largest bound is at most the largest outside J) and errs only when some interval fails: P(error) <= delta,
whatever the features and however wrong a model of them would be.

Per round: the intervals of the compounds whose counts changed (Newton's method, scalar, remembered per count)
and an O(K) pass for J, l_t and u_t; no model fit, nothing quadratic in K.
"""

from __future__ import annotations

import numpy as np

from screenbai.bandits.certainty.no_model import MODEL, anytime_interval, certified_from_intervals
from screenbai.bandits.core.params import DELTA, HIT_RATE_EPSILON, M
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import Policy
from screenbai.bandits.core.registry import register
from screenbai.bandits.numerics.ties import argmax_random, argmin_random


class _Intervals:
    """Each compound's anytime interval at level ``alpha`` for given (tests, successes), recomputed only for the
    compounds whose counts changed since the last call (a cache keyed by the counts, so right after any load of a
    state; never part of one). Always the scalar form (``anytime_interval``, which remembers the counts it has
    solved): a round changes two compounds, and the answer must not depend on how many changed since the cache was
    filled."""

    def __init__(self, K: int, alpha: float):
        self.alpha = float(alpha)
        self.tests = np.zeros(K)
        self.successes = np.zeros(K)
        self.lo, self.hi = np.zeros(K), np.ones(K)

    def at(self, tests: np.ndarray, successes: np.ndarray, arms: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
        """Every compound's (lower ends, upper ends), given the counts of ``arms`` (default all; ``tests`` and
        ``successes`` then of those arms only): the other compounds' counts are those of the last call."""
        arms = np.arange(self.tests.size) if arms is None else arms
        moved = (tests != self.tests[arms]) | (successes != self.successes[arms])
        changed, tests, successes = arms[moved], tests[moved], successes[moved]
        for k, t, s in zip(changed.tolist(), tests.tolist(), successes.tolist()):  # the compounds tested since
            self.lo[k], self.hi[k] = anytime_interval(s, t, self.alpha)          # the last call: few a round
        self.tests[changed], self.successes[changed] = tests, successes
        return self.lo, self.hi


class EachArmIntervals(StoppingRule):
    """The certificate of every compound's own anytime interval, at delta / K each (module docstring), as a
    stopping rule: stop when every arm of the answer is certified epsilon-good. Reads the policy's recorded
    counts and sums only; keeps no state."""

    name = "each compound's intervals"

    def __init__(self, epsilon: float, delta: float, K: int, m: int = 1):
        super().__init__(epsilon, delta)
        self.K, self.m = int(K), int(m)
        self._recorded = _Intervals(self.K, self.delta / self.K)

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower ends, upper ends) of every compound's interval from its recorded outcomes."""
        return self._recorded.at(self.policy.n.astype(float), self.policy.sums)

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        return certified_from_intervals(*self.intervals(), answer, self.m)

    def model(self) -> tuple[str, tuple[str, ...]]:
        return MODEL.format(K=self.K), ()


@register("kl-lucb")
class KLLUCB(Policy):
    """KL-LUCB (Kaufmann & Kalyanakrishnan 2013) on each compound's own 0/1 outcomes: no model of the features;
    delta-correct (best arm, top-m, epsilon on the hit rates) whenever each compound's outcomes are independent
    draws of its rate, whatever the features.

    The hand-over when the model check rejects a model (``screenbai campaign restart FILE --algorithm kl-lucb``):
    it tests every compound at least once, so it suits short lists.
    """

    name = "kl-lucb"
    binary_rewards = True
    models_features = False
    m: int = M
    epsilon: float = HIT_RATE_EPSILON
    delta: float = DELTA

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.stopping_rule = EachArmIntervals(p.epsilon, p.delta, self.K, self.m).attach(self)
        self._planning = _Intervals(self.K, p.delta / self.K)  # a cache keyed by the counts: right after any load
        self._checked_at = -1  # tests recorded when the rule last said no: not asked again on the same outcomes
        self._answer_at: tuple[int, np.ndarray] | None = None  # (tests recorded, J(t)): one O(K) pass a round
        self._planned_at: tuple[int, np.ndarray] | None = None  # (tests recorded, tests in flight) of _planning

    def _after_load(self) -> None:
        super()._after_load()
        self._checked_at = -1
        self._answer_at = None
        self._planned_at = None

    def _stops_now(self) -> bool:
        if self._checked_at == self.n_samples:
            return False
        rule = self.stopping_rule
        assert rule is not None
        if rule.check() is not None:
            return True
        self._checked_at = self.n_samples
        return False

    def _select(self):
        if self._stops_now():
            return None
        leaders = self._current_answer()
        if self.n_in_flight:
            lo, hi = self._planning_intervals()
        else:
            assert isinstance(self.stopping_rule, EachArmIntervals)
            lo, hi = self.stopping_rule.intervals()
        others = hi.copy()
        others[leaders] = -np.inf
        # l_t among the leaders alone: J(t) is in ascending order, so its ties are those of an argmin over all K
        # with inf outside J(t), in the same order (the same draw)
        low, high = int(leaders[argmin_random(lo[leaders], self.rng)]), argmax_random(others, self.rng)
        return np.array([low if hi[low] - lo[low] > hi[high] - lo[high] else high], dtype=np.int64)

    def _planning_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """The intervals the sampling rule reads while tests are in flight: each such test counts at the compound's
        observed rate (0.5 before any), which narrows its interval in place. Between two rounds of one plate only
        the compound just proposed changes, so while no outcome has been recorded (the tests recorded are those
        of the last call) only the compounds whose tests in flight changed are looked at, not all K."""
        flight = self.in_flight
        last = self._planned_at
        arms = None if last is None or last[0] != self.n_samples else np.flatnonzero(flight != last[1])
        self._planned_at = (self.n_samples, flight)
        n, s, f = (self.n, self.sums, flight) if arms is None else (self.n[arms], self.sums[arms], flight[arms])
        f = f.astype(float)
        rate = np.divide(s, n, out=np.full(n.size, 0.5), where=n > 0)
        return self._planning.at(n + f, s + f * rate, arms)

    def _update(self, arms, rewards) -> None:
        pass

    def _diagnostics(self) -> dict:
        """The diagnostics, with the stopping statistic as a campaign's status reads it: ``stat``, the largest
        certified epsilon of the current answer (its stop fires at <= epsilon)."""
        out = dict(self.diagnostics)
        rule = self.stopping_rule
        assert isinstance(rule, EachArmIntervals)
        out["stat"] = float(rule.certified_epsilon(self._current_answer()).max(initial=0.0))
        out["stat_fires_at"] = self.epsilon
        out["stat_name"] = "the certified epsilon of its answer (each compound's own wells) is"
        return out

    def _recommend(self, rng: np.random.Generator) -> np.ndarray:
        """J(t): the m compounds of highest observed hit rate (never tested: last), ties to the most tested, then
        the lowest index; no draw, so the round's J(t) costs no copy of the generator."""
        rate = np.divide(self.sums, self.n, out=np.full(self.K, -1.0), where=self.n > 0)
        if self.m == 1:  # O(K): the best rate, then the most tests, then the lowest index
            tied = np.flatnonzero(rate == rate.max())
            return tied[[int(np.argmax(self.n[tied]))]]
        order = np.lexsort((-np.arange(self.K), self.n, rate))  # ascending: the last m are the answer
        return np.sort(order[-self.m:])

    def _current_answer(self) -> np.ndarray:
        """J(t), computed once per recorded outcome: the stopping check and the sampling rule both ask for it
        (it reads the recorded counts only, so tests in flight do not change it)."""
        if self._answer_at is None or self._answer_at[0] != self.n_samples:
            self._answer_at = (self.n_samples, self._recommend(self.rng))
        return self._answer_at[1]
