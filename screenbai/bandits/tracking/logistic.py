"""Block Track-and-Stop for the logistic model, stopped by the likelihood-ratio confidence set.

Sampling: the blocks of ``linear.LinearTrackAndStop`` (a spanning first block of d tests, then
blocks fixed before their outcomes, built test by test to cover the directions x_i - x_j that
still need the most information), with the local Fisher information of the logistic model: a test
of arm k at the penalised MLE theta_hat brings mu'(x_k'theta_hat) x_k x_k', and the pair (i, j)
needs information in the direction mu'_i x_i - mu'_j x_j with margin mu_i - mu_j + epsilon (the
lower bound's local form, ``certainty.complexity``).

Stopping and guarantee: the likelihood-ratio confidence set of ``lr_set`` (GLGapE's default
calibration),

    C_t = {theta : L_t(theta) <= P_t + log(1/delta)},

L_t the negative log-likelihood of the outcomes so far and P_t the loss of the predictions made
before each outcome (``lr_set.RunningPredictor``: a Bayesian average over three Gaussian priors of
moderated Laplace predictives; each batch of outcomes told together is predicted from the outcomes
before it). exp(L_t(theta*) - P_t) is a non-negative martingale with mean 1 whatever the sampling
rule, so theta* stays in C_t at all times with probability >= 1 - delta (Ville's inequality;
Wasserman, Ramdas & Balakrishnan 2020; Emmenegger et al. 2023). The set is also restarted late, on
a grid of window starts fixed in advance and mixed with fixed weights (``lr_windows``): each
window's set drops the regret of the predictions before it, and every window's set holds theta* on
the same event of probability >= 1 - delta. The answer (the m largest fitted means) is returned
when, for every theta in one window's set, each arm of it is within epsilon of every other arm's
mean (``LikelihoodRatioSet.open_arms`` == 0): then it is epsilon-correct with probability
>= 1 - delta. Nothing else is assumed: outcomes 0/1 from the logistic model on these features; no
bound S on ||theta*||, no lower bound c_mu on mu'.

The certificate: the smallest epsilon for which a window's set certifies the current answer
(bisection on epsilon with the same test), valid at any time for the same reason.

What is not done here: a per-direction fixed-design bound for the logistic model (RAGE-GLM, Jun et
al. 2021) would remove the rest of the predictions' regret from the threshold; its conditions (a
burn-in depending on the unknown kappa) are not met by an algorithm that assumes no constant. Each
window's set still pays about (d - 1)/2 nats for fitting the nuisance directions (its minimum over
the alternative is a d-parameter fit, the predictions are not), so the stopping level stays above
log(1/delta) + (d - 1)/2 at any d.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from scipy.special import expit

from screenbai.bandits.core.params import LAMBDA_REG, like, pinned, run_state
from screenbai.bandits.core.registry import register
from screenbai.bandits.numerics.glm import SeparableDataError, logistic_mle
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, RunningPredictor, forecast_level, nll, pair_stands
from screenbai.bandits.numerics.lr_windows import LRWindows
from screenbai.bandits.tracking.blocks import pinv_psd
from screenbai.bandits.tracking.linear import GROWTH, LinearTrackAndStop

#: the likelihood-ratio test runs after every this fraction more tests (GLGapE: 1 %)
CHECK_GROWTH = 0.01
#: the test is skipped while a rival beats the answer by more than epsilon at this fraction of the
#: set's quadratic radius around theta_hat (it would fail; skipping only delays the stop)
SKIP_RADIUS = 0.5
#: blocks complete the information collected so far (False: each block repeats the whole design)
TRACK_CUMULATIVE = True
#: at this many dimensions or fewer the blocks repeat the whole design and the set is not restarted
#: late: the predictions' regret is small there, so late windows only cost their weight (log 2 nats),
#: and tracking the cumulative information spent more tests (kw_synthetic d = 2, 20 runs, delta 0.05:
#: median 686.5 tests with both, 549.5 with neither; at d = 5 tracking saves: 639 against 836)
SMALL_D = 2
#: bisection steps of the certified epsilon
_CERT_STEPS = 12


@register(
    "log-tas",
    description="Block Track-and-Stop, logistic model: tracks the local optimal allocation in blocks, stopped by "
    "the likelihood-ratio confidence set; delta-correct (best arm, top-m, epsilon on the means) for 0/1 outcomes "
    "of a logistic model, with no bound S or c_mu.",
)
class LogisticTrackAndStop(LinearTrackAndStop):
    """Block Track-and-Stop (logistic model); see the module docstring.

    Parameters: m, delta, epsilon (on the means), growth (largest block as a fraction of the tests
    so far), lambda_reg (ridge penalty of the MLE that guides the design and the predictions; it
    does not enter the guarantee).
    """

    name = "log-tas"
    model = "logistic"
    binary_rewards = True
    sigma: float = pinned(0.5)
    #: the likelihood-ratio set is valid for any adapted order of tests: absorbed outcomes count in full
    absorbed_outcomes_count: ClassVar[bool] = True
    #: small blocks: each block's outcomes are predicted with the estimate from before it (P_t)
    growth: float = like(GROWTH, default=0.1)
    lambda_reg: float = LAMBDA_REG
    min_block: ClassVar[float] = 0.05
    #: block 2 sized by the greedy design like every later block (lin-tas takes it whole)
    first_design_full: ClassVar[bool] = False

    # the run's state
    _predictor: RunningPredictor = run_state()  # the predictions made before each outcome, and their loss P_t
    _theta_pred: np.ndarray = run_state()  # the estimate that predicts the next block's outcomes
    _theta_mle: np.ndarray | None = run_state()
    _n_closed: int = run_state()
    _plan: np.ndarray = run_state()  # the rest of the current block, handed out one test at a time
    _next_check: int = run_state()  # the sample count of the next likelihood-ratio test
    _windows: LRWindows = run_state()  # the set restarted late (lr_windows)

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.lambda_reg = p.lambda_reg
        self._predictor = RunningPredictor(self.d_eff)
        self._theta_pred = np.zeros(self.d_eff)
        self._theta_mle = None
        self._n_closed = 0
        self._plan = np.empty(0, dtype=np.int64)
        self._next_check = 0  # the rest of the current block, handed out one test at a time
        self._windows = LRWindows(self.d_eff, self.K, late=self.d_eff > SMALL_D)  # the set restarted late
        self.diagnostics.pop("threshold", None)  # the set's level is P_t + log(1/delta), not a constant
        # the index status shows: rivals the likelihood-ratio test has not ruled out yet (fires at 0)
        self.diagnostics.update(stat=float(self.K - self.m), stat_fires_at=0.0,
                                stat_name="rivals not yet ruled out by its likelihood-ratio test:")

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    # ------------------------------------------------------------------ estimates
    def _estimate(self, counts: np.ndarray, sums: np.ndarray) -> np.ndarray | None:
        pulled = np.flatnonzero(counts)
        if pulled.size < self.d_eff or np.linalg.matrix_rank(self.Z[pulled]) < self.d_eff:
            return None
        fit = logistic_mle(self.Z[pulled], counts[pulled], sums[pulled], self.lambda_reg, theta0=self._theta_pred)
        return fit.theta

    def _design_features(self, theta: np.ndarray) -> np.ndarray:
        eta = self.Z @ theta
        slope = expit(eta) * expit(-eta)
        return self.Z * np.sqrt(slope)[:, None]

    def _information_before(self, Zd: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """The Fisher information of the tests so far at theta_hat: the likelihood-ratio set pools every
        outcome, so a block completes the information collected (tracking the cumulative allocation,
        as Track-and-Stop's C-tracking) instead of repeating the whole design."""
        return (Zd.T * counts) @ Zd if TRACK_CUMULATIVE and self.d_eff > SMALL_D else None

    def _needs(self, theta: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Directions and the Fisher information each still needs, in the lower bound's local form
        (certainty.complexity): y = mu'_i x_i - mu'_j x_j (the constraint mu_j - mu_i > epsilon
        linearised at theta_hat), margin g = mu_i - mu_j + epsilon floored at its standard deviation,
        need 2 (log(1/delta) + (d/2) log(1 + t/d) + 3/2) / g^2 (the likelihood-ratio set's level
        grows with the regret of the running predictions, about (d/2) log t)."""
        eta = self.Z @ theta
        mu = expit(eta)
        slope = mu * (1.0 - mu)
        answer = self._leaders(theta, np.random.default_rng(0))
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        Zd = self._design_features(theta)
        P = pinv_psd((Zd.T * counts) @ Zd)[0]
        t = float(counts.sum())
        level = forecast_level(t, self.d_eff, self.delta) + 1.5
        Ys, cs = [], []
        for i in answer:
            i = int(i)
            Y = slope[i] * self.Z[i] - slope[outside, None] * self.Z[outside]
            sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", Y @ P, Y), 0.0))
            margin = np.maximum(mu[i] - mu[outside] + self.epsilon, np.maximum(sd, 1e-12))
            Ys.append(Y)
            cs.append(2.0 * level / margin**2)
        return np.vstack(Ys), np.concatenate(cs)

    def _select(self):
        """One test at a time from the current block's plan (a new block when it is spent), so that
        each outcome is predicted with the estimate of every outcome before it (a smaller P_t)."""
        if not self._plan.size:
            arms = super()._select()
            if arms is None:
                return None
            self._plan = np.asarray(arms, dtype=np.int64)
        arm, self._plan = int(self._plan[0]), self._plan[1:]
        return arm

    # ------------------------------------------------------------------ outcomes and the stopping rule
    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        # the outcomes are predicted from the outcomes before them (lr_set's P_t), then the predictor refitted
        if self._absorbing:
            self._absorb_predictions(arms, rewards)
        else:
            before = self.n_samples - arms.size
            self._windows.before_batch(before, self.n, self.sums, arms, rewards, self._predictor.loss)
            self._predictor.observe(self.Z[arms], rewards, before)
        pulled = np.flatnonzero(self.n)
        self._predictor.refit(self.Z[pulled], self.n[pulled], self.sums[pulled])
        same = np.flatnonzero(self._predictor.lams == self.lambda_reg)  # the design's own fit, already made
        if same.size and pulled.size >= self.d_eff and np.linalg.matrix_rank(self.Z[pulled]) == self.d_eff:
            theta = self._predictor.theta[same[0]].copy()
        else:
            theta = self._estimate(self.n.astype(float), self.sums)
        if theta is not None:
            self._theta_pred = theta
        super()._update(arms, rewards)
        if not self._finished and theta is not None:
            # the set is valid at every outcome: tested between block ends too (_check_stop's schedule)
            answer = self._check_stop()
            if answer is not None:
                self._answer = answer
                self._finish(True)

    def _absorb_predictions(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """The prediction loss of outcomes told all at once by ``absorb`` (a campaign's outcomes from before
        a change, in the order recorded): predicted in consecutive chunks, each with the estimate of
        the outcomes before it (a chunk of d, then growing by ``growth``), as if they had come in blocks.
        Predictable in that fixed order, so the likelihood-ratio set stays valid; one prediction
        for them all would add up to their number times log 2 to its level."""
        t0 = self.n_samples - arms.size
        n = self.n.copy()
        s = self.sums.copy()
        np.subtract.at(n, arms, 1)
        np.subtract.at(s, arms, rewards)
        lo = 0
        while lo < arms.size:
            hi = min(arms.size, lo + max(self.d_eff, math.ceil(self.growth * (t0 + lo))))
            a, r = arms[lo:hi], rewards[lo:hi]
            np.add.at(n, a, 1)
            np.add.at(s, a, r)
            # each chunk a batch of the late-started sets too (lr_windows: n and s count the chunk)
            self._windows.before_batch(t0 + lo, n, s, a, r, self._predictor.loss)
            self._predictor.observe(self.Z[a], r, t0 + lo)
            if hi < arms.size:  # the last chunk's fit is _update's
                pulled = np.flatnonzero(n)
                self._predictor.refit(self.Z[pulled], n[pulled], s[pulled])
            lo = hi

    def _close_block(self, counts: np.ndarray, sums: np.ndarray) -> None:
        self._n_closed += 1
        self.diagnostics["blocks"] = self._n_closed

    def _window_data(self):
        """Per window tried (lr_windows: the full one first, then the latest late ones): its start, the
        features, counts and sums of its pulled arms, its level P^(b) + log(1/pi_b) + log(1/delta), and
        a starting point for the set's minimisation."""
        for start, n, s, P, log_inv in self._windows.windows(self.n, self.sums, self._predictor.loss, self.n_samples):
            pulled = np.flatnonzero(n)
            if pulled.size < self.d_eff:
                continue
            theta0 = self._theta_mle if start == 0 and self._theta_mle is not None else self._theta_pred
            yield start, self.Z[pulled], n[pulled], s[pulled], P + log_inv + math.log(1.0 / self.delta), theta0

    def _lr_sets(self) -> list[LikelihoodRatioSet]:
        """The bounded likelihood-ratio sets of the windows tried; each holds theta* on the same event."""
        sets = []
        for _, Zp, n, s, level, theta0 in self._window_data():
            try:
                cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
            except SeparableDataError:
                continue
            if cs.bounded:
                sets.append(cs)
        return sets

    def _check_stop(self) -> np.ndarray | None:
        """The likelihood-ratio test of each window tried, once the tests have grown by CHECK_GROWTH (at
        least d) since its last run (each run costs O(K d^2) and up to a few hundred Newton solves per
        window); the answer is returned as soon as one window's set certifies it (lr_windows)."""
        if self.n_samples < self._next_check:
            return None
        self._next_check = self.n_samples + max(self.d_eff, int(CHECK_GROWTH * self.n_samples))
        answer = self._leaders(self._theta_pred, np.random.default_rng(self._n_closed))
        eta = self.Z @ self._theta_pred
        mu = expit(eta)
        slope = mu * (1.0 - mu)
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        # the closest rival and the weakest arm of the answer: GLGapE's cheap witness
        j = int(np.flatnonzero(outside)[np.argmax(eta[outside])])
        i = int(answer[np.argmin(eta[answer])])
        fewest_open = self.K - self.m
        for start, Zp, n, s, level, theta0 in self._window_data():
            if self._surely_fails(Zp, n, s, level, answer, outside, mu, slope, i, j):
                continue
            try:
                cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
            except SeparableDataError:
                continue
            if start == 0 and cs.bounded:
                self._theta_mle = cs.theta
            n_open = cs.open_arms(self.Z, answer, self.epsilon)
            if n_open is not None:
                fewest_open = min(fewest_open, n_open)
            if n_open == 0:
                self.diagnostics.update(stat=0.0, window_start=float(start))
                return answer
        self.diagnostics["stat"] = float(fewest_open)
        return None

    def _surely_fails(self, Zp, n, s, level, answer, outside, mu, slope, i, j) -> bool:
        """Whether a window's test would fail, by two cheap looks (skipping it only delays the stop): in
        the quadratic model of its set around theta_hat a rival still beats the answer by more than
        epsilon at SKIP_RADIUS of the set's radius, or a point of the set has rival j beat arm i."""
        eta_p = Zp @ self._theta_pred
        mu_p = expit(eta_p)
        Hinv = pinv_psd((Zp.T * (n * mu_p * (1.0 - mu_p))) @ Zp)[0]
        radius = math.sqrt(2.0 * max(level - nll(Zp, n, s, self._theta_pred), 0.0))
        for a in answer:
            G = slope[outside, None] * self.Z[outside] - slope[a] * self.Z[a]
            sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", G @ Hinv, G), 0.0))
            if np.any(mu[outside] - mu[a] + SKIP_RADIUS * radius * sd > self.epsilon):
                return True
        P = pinv_psd((Zp.T * n) @ Zp)[0]
        return pair_stands(Zp, n, s, level, self._theta_pred, P, self.Z[i], self.Z[j], self.epsilon)

    # ------------------------------------------------------------------ answers
    def _recommend(self, rng: np.random.Generator):
        if self._answer is not None:
            return self._answer.copy()
        if not self.n_samples or self._estimate(self.n.astype(float), self.sums) is None:
            return super(LinearTrackAndStop, self)._recommend(rng)
        return self._leaders(self._theta_pred, rng)

    def _certified_epsilon(self) -> np.ndarray | None:
        """The smallest epsilon (on the means) for which a window's likelihood-ratio set certifies the
        current answer now (the same value for each arm of a top-m answer; inf while nothing is
        certified). Every window's set holds theta* on the same event (lr_windows), so the smallest
        epsilon over the windows is certified at delta."""
        if self._estimate(self.n.astype(float), self.sums) is None:
            return None
        answer = np.asarray(self._recommend(np.random.default_rng(0)))
        sets = self._lr_sets()

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

    def stopping_threshold(self, t: float, delta: float) -> float:
        """The likelihood-ratio set's level, approximately (lr_set.forecast_level): the set's own level
        log(1/delta) + P_t is known only from the outcomes."""
        return forecast_level(t, self.d_eff, delta)

    def _diagnostics(self) -> dict:
        return dict(self.diagnostics, blocks=self._n_closed)
