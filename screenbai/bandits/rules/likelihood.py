"""The likelihood-ratio confidence set of the logistic model as a stopping rule (core/parts.py):
restarted late for log-tas (tracking/logistic.py, ``WindowedLikelihoodRatio``), the full set for
GLGapE's default calibration (logistic/glgape.py, ``LikelihoodRatioTest``).

    C_t = {theta : L_t(theta) <= P_t + log(1/delta)},

L_t the negative log-likelihood of the outcomes so far and P_t the loss of the predictions made before
each outcome (numerics/lr_set.py, ``RunningPredictor``). exp(L_t(theta*) - P_t) is a non-negative
martingale with mean 1 whatever the sampling rule, so theta* stays in C_t at all times with probability
>= 1 - delta (Ville's inequality). The set is also restarted late, on a grid of window starts fixed in
advance and mixed with fixed weights (numerics/lr_windows.py): every window's set holds theta* on the
same event. An answer is certified epsilon-good when, for every theta in one window's set, each arm of
it is within epsilon of every other arm's mean (``LikelihoodRatioSet.open_arms`` == 0).

The rule reads the owner's counts, sums and features (``policy.n``, ``policy.sums``, ``policy.Z``) and
its current estimate ``policy.theta_hat`` (a starting point for the set's minimisation and the cheap
witnesses; it does not enter the guarantee). The policy tells it every outcome with ``observe`` (or
``absorb`` for outcomes told all at once), before it refits its own estimate from ``predictor``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from screenbai.bandits.certainty.certificate import certified_from_bounds
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.numerics.linalg import pinv_psd
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, RunningPredictor, forecast_level, nll
from screenbai.bandits.numerics.lr_windows import LRWindows

#: log-tas's likelihood-ratio test runs after every outcome where K d^2 is at most this (each test costs O(K d^2) and
#: up to a few hundred Newton solves per window and answer tried: 6 % more run time on kw_synthetic d = 5, 29 % at
#: d = 10, K = 50, but 13 times at K = 400, d = 21); above it, and for GLGapE's rule, on the CHECK_GROWTH schedule
EVERY_OUTCOME_SIZE = 10_000
#: the scheduled test runs after every this fraction more tests (at least one; the floor was d tests)
CHECK_GROWTH = 0.01
#: the test is skipped while a rival beats the answer by more than epsilon at this fraction of the
#: set's quadratic radius around theta_hat (it would fail; skipping only delays the stop)
SKIP_RADIUS = 0.5
#: bisection steps of the certified epsilon
_CERT_STEPS = 12
#: arms a check tries as the answer (m = 1): the leader, then up to this many - 1 others whose fitted mean is
#: within epsilon of the leader's, largest lower end of the mean first (``answer_candidates``)
ANSWER_CANDIDATES = 3


def next_check(n_samples: int) -> int:
    """The sample count of the likelihood-ratio test after one made at ``n_samples`` (CHECK_GROWTH more tests,
    at least one more). Checks do not steer the sampling, so how often they run moves only the stop."""
    return n_samples + max(1, int(CHECK_GROWTH * n_samples))


def pair_stands(Zp, n, s, level: float, theta: np.ndarray, P: np.ndarray, zi: np.ndarray, zj: np.ndarray,
                epsilon: float) -> bool:
    """A cheap witness that arm j may beat arm i by more than epsilon: a point of C_t where it does.

    From an estimate ``theta`` inside C_t, step along P (z_j - z_i) (P any positive definite
    matrix, e.g. the inverse design matrix) to the nearest point where mu_j - mu_i > epsilon, and
    check that it lies in C_t.  True means the stopping rule cannot fire now (that point is beyond
    every margin the full test may use); False means nothing (the full test decides).
    O(d^2 + K_+ d).
    """
    if nll(Zp, n, s, theta) > level:
        return False
    v = zj - zi
    if not v.any():  # identical features: the same mean for every theta, j never beats i
        return False
    Pv = P @ v
    u = Pv / float(v @ Pv)  # v^T u = 1: one unit of s raises the gap x_j^T theta - x_i^T theta by 1
    a0, da, b0, db = float(zi @ theta), float(zi @ u), float(zj @ theta), float(zj @ u)

    def beaten(step: float) -> bool:
        return float(expit(b0 + db * step) - expit(a0 + da * step)) > epsilon

    lo, hi = 0.0, 0.25
    while not beaten(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return False
    for _ in range(20):  # the first crossing, to within 2^-20 of the bracket
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if beaten(mid) else (mid, hi)
    return nll(Zp, n, s, theta + hi * u) <= level


class WindowedLikelihoodRatio(StoppingRule):
    """The likelihood-ratio set restarted late (see the module docstring).

    Z: the K x d features the model uses; m: size of the answer; epsilon: slack on the means; delta:
    level; growth: outcomes told all at once (``absorb``) are predicted in chunks growing by this
    fraction; late: restart the set late (lr_windows; False: the full window only).
    State: the running predictor, the late windows, the last unpenalised MLE and the sample count of
    the next test.
    """

    name = "likelihood ratio"
    state_fields = ("predictor", "windows", "theta_mle", "next_check")

    def __init__(self, Z: np.ndarray, m: int, epsilon: float, delta: float, growth: float, late: bool):
        super().__init__(epsilon, delta)
        self.Z = Z
        self.K, self.d = Z.shape
        self.m, self.growth = int(m), float(growth)
        self.predictor = RunningPredictor(self.d)  # the predictions made before each outcome, and their loss P_t
        self.windows = LRWindows(self.d, self.K, late=late)  # the set restarted late
        self.theta_mle: np.ndarray | None = None
        self.next_check = 0  # the sample count of the next likelihood-ratio test
        self.every_outcome = self.K * self.d**2 <= EVERY_OUTCOME_SIZE  # else on the schedule

    # ------------------------------------------------------------------ outcomes
    def observe(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """The outcomes predicted from the outcomes before them (P_t), then the predictor refitted."""
        pol = self.policy
        before = pol.n_samples - arms.size
        self.windows.before_batch(before, pol.n, pol.sums, arms, rewards, self.predictor.loss)
        self.predictor.observe(self.Z[arms], rewards, before)
        self._refit(pol.n, pol.sums)

    def absorb(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """The prediction loss of outcomes told all at once (a campaign's outcomes from before a change,
        in the order recorded): predicted in consecutive chunks, each with the estimate of the outcomes
        before it (a chunk of d, then growing by ``growth``), as if they had come in blocks. Predictable in
        that fixed order, so the likelihood-ratio set stays valid; one prediction for them all would add
        up to their number times log 2 to its level."""
        pol = self.policy
        t0 = pol.n_samples - arms.size
        n = pol.n.copy()
        s = pol.sums.copy()
        np.subtract.at(n, arms, 1)
        np.subtract.at(s, arms, rewards)
        lo = 0
        while lo < arms.size:
            hi = min(arms.size, lo + max(self.d, math.ceil(self.growth * (t0 + lo))))
            a, r = arms[lo:hi], rewards[lo:hi]
            np.add.at(n, a, 1)
            np.add.at(s, a, r)
            # each chunk a batch of the late-started sets too (lr_windows: n and s count the chunk)
            self.windows.before_batch(t0 + lo, n, s, a, r, self.predictor.loss)
            self.predictor.observe(self.Z[a], r, t0 + lo)
            if hi < arms.size:  # the last chunk's fit is the one after all outcomes
                self._refit(n, s)
            lo = hi
        self._refit(pol.n, pol.sums)

    def _refit(self, n: np.ndarray, sums: np.ndarray) -> None:
        pulled = np.flatnonzero(n)
        self.predictor.refit(self.Z[pulled], n[pulled], sums[pulled])

    # ------------------------------------------------------------------ the windows' sets
    def _window_data(self, min_pulled: int | None = None):
        """Per window tried (lr_windows: the full one first, then the latest late ones) with at least
        ``min_pulled`` pulled arms (default d): its start, the features, counts and sums of its pulled arms,
        its level P^(b) + log(1/pi_b) + log(1/delta), and a starting point for the set's minimisation."""
        pol = self.policy
        least = self.d if min_pulled is None else int(min_pulled)
        for start, n, s, P, log_inv in self.windows.windows(pol.n, pol.sums, self.predictor.loss, pol.n_samples):
            pulled = np.flatnonzero(n)
            if pulled.size < max(least, 1):
                continue
            theta0 = self.theta_mle if start == 0 and self.theta_mle is not None else pol.theta_hat
            yield start, self.Z[pulled], n[pulled], s[pulled], P + log_inv + math.log(1.0 / self.delta), theta0

    def _sets(self) -> list[LikelihoodRatioSet]:
        """The likelihood-ratio sets of the windows tried; each holds theta* on the same event. A window
        whose outcomes are separable gives a set without a minimiser, valid all the same (lr_set.py)."""
        return [LikelihoodRatioSet(Zp, n, s, level, theta0) for _, Zp, n, s, level, theta0 in self._window_data()]

    def lr_sets(self) -> list[LikelihoodRatioSet]:
        """Every window's set with an outcome (also those the test skips, fewer arms tested than features: a
        set then unbounded along the untested directions, valid all the same); each holds theta* at every t
        on the same event, of probability at least 1 - delta (lr_windows). For what status shows of it."""
        return [LikelihoodRatioSet(Zp, n, s, level, theta0) for _, Zp, n, s, level, theta0 in self._window_data(1)]

    def check(self, answer: np.ndarray | None = None) -> np.ndarray | None:
        """The likelihood-ratio test of each window tried, after every outcome where that is cheap
        (EVERY_OUTCOME_SIZE), else once the tests have grown by CHECK_GROWTH (at least one) since its last run.
        Every outcome is worth a test because a certificate comes abruptly and can come and go with single
        outcomes (each adds its prediction loss to the level): on kw_synthetic d = 5 seed 0, run 3 read every
        rival open until 674 tests, 20 at 675 and none at 681, where the 1 % schedule next certified at 746. The
        tests do not steer the sampling, so testing after every outcome stops each run no later than any
        schedule (docs/lower_bound.md, "Session 16"). An answer is returned as soon as one window's set
        certifies it (lr_windows). With m = 1 the answers tried are ``answer`` (the leader) and, after it, the other
        arms of ``answer_candidates``: any arm a set certifies is epsilon-good on the event that every
        window's set holds theta* (probability >= 1 - delta), so stopping on whichever is certified first
        keeps the guarantee, and the arm certified is the one returned. The policy's diagnostics get
        ``stat``, the fewest rivals left open by a window for the leader."""
        pol = self.policy
        if not self.every_outcome:
            if pol.n_samples < self.next_check:
                return None
            self.next_check = next_check(pol.n_samples)
        answer = np.asarray(self.candidate() if answer is None else answer)
        eta = self.Z @ pol.theta_hat
        mu = expit(eta)
        slope = mu * (1.0 - mu)
        answers = [answer]
        if self.m == 1:
            answers += [np.array([a]) for a in self.answer_candidates(int(answer[0]), eta)]
        fewest_open = self.K - self.m
        for start, Zp, n, s, level, theta0 in self._window_data():
            cs: LikelihoodRatioSet | None = None
            for k, ans in enumerate(answers):
                outside = np.ones(self.K, dtype=bool)
                outside[ans] = False
                # the closest rival and the weakest arm of the answer: GLGapE's cheap witness
                j = int(np.flatnonzero(outside)[np.argmax(eta[outside])])
                i = int(ans[np.argmin(eta[ans])])
                if self._surely_fails(Zp, n, s, level, ans, outside, mu, slope, i, j):
                    continue
                if cs is None:
                    cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
                    if start == 0 and cs.bounded:
                        self.theta_mle = cs.theta
                n_open = cs.open_arms(self.Z, ans, self.epsilon)
                if n_open is not None and k == 0:
                    fewest_open = min(fewest_open, n_open)
                if n_open == 0:
                    pol.diagnostics.update(stat=0.0, window_start=float(start))
                    return ans
        pol.diagnostics["stat"] = float(fewest_open)
        return None

    def answer_candidates(self, leader: int, eta: np.ndarray) -> np.ndarray:
        """Arms other than ``leader`` a check also tries as the answer (m = 1), at most ANSWER_CANDIDATES - 1:
        those whose fitted mean mu(x_a'theta_hat) is within epsilon of the leader's (an arm further below
        cannot be certified while the fit itself puts the leader more than epsilon above it), the largest
        lower end first, mu(x_a'theta_hat - ||x_a||_{M^-1}) with M = sum_s x_s x_s^T (an arm tested often
        has its mean pinned, which is what a certificate of it needs). O(K d^2)."""
        if ANSWER_CANDIDATES <= 1:
            return np.empty(0, dtype=np.int64)
        mu = expit(eta)
        near = np.flatnonzero(mu > mu[leader] - self.epsilon)
        near = near[near != leader]
        if not near.size:
            return near
        pol = self.policy
        pulled = np.flatnonzero(pol.n)
        P = pinv_psd((self.Z[pulled].T * pol.n[pulled]) @ self.Z[pulled])[0]
        Zn = self.Z[near]
        lower = eta[near] - np.sqrt(np.maximum(np.einsum("ij,ij->i", Zn @ P, Zn), 0.0))
        return near[np.argsort(-lower, kind="stable")[:ANSWER_CANDIDATES - 1]]

    def _surely_fails(self, Zp, n, s, level, answer, outside, mu, slope, i, j) -> bool:
        """Whether a window's test would fail, by two cheap looks (skipping it only delays the stop): in
        the quadratic model of its set around theta_hat a rival still beats the answer by more than
        epsilon at SKIP_RADIUS of the set's radius, or a point of the set has rival j beat arm i."""
        theta = self.policy.theta_hat
        eta_p = Zp @ theta
        mu_p = expit(eta_p)
        Hinv = pinv_psd((Zp.T * (n * mu_p * (1.0 - mu_p))) @ Zp)[0]
        radius = math.sqrt(2.0 * max(level - nll(Zp, n, s, theta), 0.0))
        for a in answer:
            G = slope[outside, None] * self.Z[outside] - slope[a] * self.Z[a]
            sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", G @ Hinv, G), 0.0))
            if np.any(mu[outside] - mu[a] + SKIP_RADIUS * radius * sd > self.epsilon):
                return True
        P = pinv_psd((Zp.T * n) @ Zp)[0]
        return pair_stands(Zp, n, s, level, theta, P, self.Z[i], self.Z[j], self.epsilon)

    def stops(self, answer: np.ndarray) -> bool:
        """Whether one window's set certifies ``answer`` now (no schedule, no shortcut)."""
        return any(cs.open_arms(self.Z, np.asarray(answer), self.epsilon) == 0 for cs in self._sets())

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        """The smallest epsilon (on the means) for which a window's likelihood-ratio set certifies the
        answer now (the same value for each arm of a top-m answer; inf while nothing is certified; None
        while the pulled arms do not span). Every window's set holds theta* on the same event
        (lr_windows), so the smallest epsilon over the windows is certified at delta."""
        pulled = np.flatnonzero(self.policy.n)
        if pulled.size < self.d or np.linalg.matrix_rank(self.Z[pulled]) < self.d:
            return None
        answer = np.asarray(answer)
        sets = self._sets()

        def certified(epsilon: float) -> bool:
            return any(cs.open_arms(self.Z, answer, epsilon) == 0 for cs in sets)

        if not certified(1.0 - 1e-9):
            return np.full(len(answer), np.inf)
        if certified(0.0):
            return np.zeros(len(answer))
        lo, hi = 0.0, 1.0
        if 0.0 < self.epsilon < 1.0:  # the run's own epsilon first: a stopped run certifies it exactly
            if certified(self.epsilon):
                hi = self.epsilon
            else:
                lo = self.epsilon
        for _ in range(_CERT_STEPS):
            mid = 0.5 * (lo + hi)
            if certified(mid):
                hi = mid
            else:
                lo = mid
        return np.full(len(answer), hi)

    def threshold(self, t: float, delta: float) -> float:
        """The likelihood-ratio set's level, approximately (lr_set.forecast_level): the set's own level
        log(1/delta) + P_t is known only from the outcomes."""
        return forecast_level(t, self.d, delta)


class LikelihoodRatioTest(StoppingRule):
    """GLGapE's likelihood-ratio stopping rule: the full set C_t only (no late windows), P_t the loss of
    the policy's running predictor (``policy._predictor``, which the policy tells every outcome), the
    test run once the tests have grown by CHECK_GROWTH (at least one) since its last run.

    It reads the owner's counts, sums and features, its penalised MLE ``policy.theta``, and the design
    ``policy.state`` (M^-1 and diag(Z M^-1 Z^T), a cheaper first look at the rivals). State: the sample
    count of the next test, the last unpenalised MLE, the number of full tests, and the outcomes and arms
    it last certified.
    """

    name = "likelihood ratio"
    state_fields = ("next_check", "theta_mle", "checks", "certified")

    def __init__(self, Z: np.ndarray, epsilon: float, delta: float):
        super().__init__(epsilon, delta)
        self.Z = Z
        self.K, self.d = Z.shape
        self.next_check = 0  # the sample count of the next stopping test
        self.theta_mle: np.ndarray | None = None  # the last unpenalised MLE found
        self.checks = 0  # full tests run
        #: (sample count, arms...) when the test certified these arms on those outcomes
        self.certified: tuple[int, ...] = ()

    def level(self) -> float:
        """The set's level P_t + log(1/delta) (lr_set.py)."""
        return self.policy._predictor.loss + float(np.log(1.0 / self.delta))

    def certifies(self, named: np.ndarray, pair: tuple[int, int]) -> bool:
        """The likelihood-ratio stopping test for the answer ``named``, on its schedule.

        It runs once the sample count has grown by CHECK_GROWTH (or by one test, whichever is more) since
        its last run. A certificate can come and go between two tests (``WindowedLikelihoodRatio.check``), so a
        run may stop later than its first certified outcome. First the sampled pair (named arm,
        rival) is tried with a cheap witness; only when it cannot show that the rival stands does the full
        test run (the unpenalised MLE, the exact test of that pair, and only if it is ruled out a pass over
        the arms and exact tests of those the pass keeps).
        """
        pol = self.policy
        if pol.n_samples < self.next_check:
            return False
        self.next_check = next_check(pol.n_samples)
        pulled = np.flatnonzero(pol.n)
        Zp, n, s = self.Z[pulled], pol.n[pulled], pol.sums[pulled]
        level = self.level()
        i, j = pair
        if pair_stands(Zp, n, s, level, pol.theta, pol.state.P, self.Z[i], self.Z[j], self.epsilon):
            return False
        self.checks += 1
        start = pol.theta if self.theta_mle is None else self.theta_mle
        cs = LikelihoodRatioSet(Zp, n, s, level, start)
        if cs.bounded:
            self.theta_mle = cs.theta
        n_open = cs.open_arms(self.Z, named, self.epsilon, pair, pol.state.P, pol.state.diag)
        if n_open is None:  # the sampled rival stands: not counted further
            return False
        pol.diagnostics["stat"] = float(n_open)
        if n_open == 0:
            self.certified = (int(pol.n_samples), *(int(a) for a in named))
        return n_open == 0

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """eq. (1) of certainty/certificate.py on C_t at the level the test uses: its pair bounds
        ``gap_bounds`` for each arm of the answer (and epsilon itself once the test has certified the
        answer on these outcomes: it proved every pair within epsilon)."""
        A = np.asarray(answer)
        pol = self.policy
        sets = self.lr_sets()
        if not sets:
            return np.full(A.size, np.inf)
        cs = sets[0]
        P, diag = (pol.state.P, pol.state.diag) if pol._phase == "adaptive" else (None, None)
        U = np.stack([cs.gap_bounds(self.Z, int(i), A.size, P, diag) for i in A])  # the m answer arms
        eps = certified_from_bounds(U, A.size)
        if self.certified == (int(pol.n_samples), *(int(a) for a in A)):
            eps = np.minimum(eps, self.epsilon)
        return eps

    def lr_sets(self) -> list[LikelihoodRatioSet]:
        """C_t at the level the test uses, of every outcome so far (none before the first): it holds theta* at
        every t with probability at least 1 - delta."""
        pol = self.policy
        pulled = np.flatnonzero(pol.n)
        if pulled.size == 0:
            return []
        start = pol.theta if self.theta_mle is None else self.theta_mle
        return [LikelihoodRatioSet(self.Z[pulled], pol.n[pulled], pol.sums[pulled], self.level(), start)]

    def threshold(self, t: float, delta: float) -> float:
        """The set's level, approximately (lr_set.forecast_level)."""
        return forecast_level(t, self.d, delta)

    def model(self) -> tuple[str, tuple[str, ...]]:
        return "the logistic model on these features", ()


class LikelihoodOr(StoppingRule):
    """The windowed likelihood-ratio set at ``lr_share`` delta OR a second valid rule at the rest: P(error)
    is at most the sum of the two shares (a union bound over their failure events). What log-tas's
    compositions share (``tracking.logistic_blocks.LikelihoodOrBlocks``, ``rules.own_wells.LikelihoodOrOwnWells``):
    outcomes go to both rules, outcomes told all at once (a campaign restarted) to the set only, and the
    set's predictor is the policy's. Subclasses build ``second`` after this constructor."""

    def __init__(self, Z: np.ndarray, m: int, epsilon: float, delta: float, growth: float, late: bool,
                 lr_share: float):
        super().__init__(epsilon, delta)
        if not 0.0 < lr_share < 1.0:
            raise ValueError(f"lr_share must be in (0, 1) (the likelihood-ratio set's share of delta); got {lr_share}")
        self.lr_share = float(lr_share)
        self.lr = WindowedLikelihoodRatio(Z, m, epsilon, lr_share * delta, growth, late)

    @property
    def second(self) -> StoppingRule:
        raise NotImplementedError

    def attach(self, policy) -> StoppingRule:
        self.lr.attach(policy)
        self.second.attach(policy)
        return super().attach(policy)

    @property
    def predictor(self) -> RunningPredictor:
        return self.lr.predictor

    def lr_sets(self) -> list[LikelihoodRatioSet]:
        """The likelihood-ratio sets (``WindowedLikelihoodRatio.lr_sets``), at lr_share delta."""
        return self.lr.lr_sets()

    def observe(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        self.lr.observe(arms, rewards)
        self.second.observe(arms, rewards)

    def absorb(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        self.lr.absorb(arms, rewards)

    def reset_caches(self) -> None:
        self.lr.reset_caches()
        self.second.reset_caches()
