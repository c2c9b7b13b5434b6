"""RAGE-GLM: phased elimination on fixed designs for the logistic model (Jun, Jain, Mason & Nassif 2021,
"Improved confidence bounds for the linear logistic model and applications to bandits", ICML), made valid
without the constants a lab cannot know (no bound S on ||theta*||, no kappa, no c_mu).

The phase machinery is RAGE's (``phased.elimination``, shared with ``linear.rage``; Fiez et al. 2019,
Algorithm 1): phase r keeps the undecided arms S_r, plans a design over all arms for the directions
Y(S_r) = {z_i - z_j : i, j in S_r} before any of its outcomes, rounds it to whole tests (and plates),
estimates from that phase's outcomes only, rejects / accepts with each pair's width and stops when every
comparison of the answer is within epsilon. What changes for 0/1 outcomes (mu the sigmoid, mu' its slope):

- **The estimate**: the unpenalised maximum-likelihood estimate theta_r of the phase's outcomes (none, and
  no decision, when they are separable).
- **The width** (Jun et al. 2021, Theorem 1, the fixed-design bound; as read here, see "Constants"): for a
  fixed design x_1..x_n with t_eff distinct arms, outcomes independent Bernoulli(mu(x_s'theta*)), Fisher
  information H_n(theta*) = sum_s mu'(x_s'theta*) x_s x_s', if the burn-in condition
  xi_n^2 = max_s ||x_s||^2_{H_n(theta*)^-1} <= 1 / gamma, gamma = d + log(6 (2 + t_eff) / delta'), holds,
  then with probability at least 1 - delta', for a fixed y, |y'(theta_hat - theta*)| <=
  W ||y||_{H_n(theta*)^-1} sqrt(log(2 (2 + t_eff) / delta')) with W = THM1_WIDTH = 3.5.
- **The information at theta* without oracle constants.** H_n(theta*) is unknown. It is bounded below by
  H_low = sum_k n_{r,k} mu'_low,k z_k z_k', where mu'_low,k = min of mu'(z_k'theta) over the likelihood-ratio
  confidence set C_t of all outcomes so far (``numerics.lr_set``: anytime valid at level delta_LR, with no
  S or c_mu); mu' falls with |z'theta|, so mu'_low,k = mu'(max(|lo_k|, |hi_k|)) with [lo_k, hi_k] a safe
  outer range of z_k'theta over C_t (``LikelihoodRatioSet._range_end``). On the event theta* in C_t
  (every t), H_n(theta*) >= H_low, hence ||y||_{H_n(theta*)^-1} <= ||y||_{H_low^-1} and
  xi_n^2 <= max_s ||x_s||^2_{H_low^-1}: the burn-in condition is checked on H_low (a phase that fails the
  check decides nothing) and the widths use P = H_low^-1:
      w_r(y) = W sqrt(L_r) ||y||_P,   L_r = log(2 (2 + t_eff) / delta_r).
- **Delta split (union bound).** delta_LR = LR_SHARE delta for the likelihood-ratio set (once, all times);
  the rest, (1 - LR_SHARE) delta, over the phases (6 / (pi^2 r^2) each) and, in phase r, over its
  N_r = |S_r| (|S_r| - 1) / 2 + |S_r| directions (the pairs, two-sided, and the arms themselves, whose
  intervals map the linear bounds to the means): delta_r = (1 - LR_SHARE) delta 6 / (pi^2 r^2 N_r).
  P(some width fails or theta* leaves C_t) <= delta_LR + sum_r sum_y delta_r = delta.
- **The design**: RAGE's XY-optimal design with the information weighted by mu' at the plug-in estimate
  (the ridge fit of all outcomes so far; it does not enter the guarantee): lambda_r = argmin max_y
  ||y||^2_{H(lambda, theta_plan)^-1}, rho_r its value (Jun et al.'s Algorithm 1 design, with the XY
  directions of Fiez et al.).
- **The phase size** (Jun et al., Algorithm 1's n_k, with our width target): n_r = max of
  (1 + eps_round) W^2 rho_r L_r / beta_r^2 (every direction of Y(S_r) within beta_r = width0 2^-(r-1)),
  (1 + eps_round) gamma xi_r^2 (the burn-in: xi_r^2 = max over the design's arms of ||z_k||^2_{H(lambda)^-1})
  and d, at the plug-in information; rounded and completed as RAGE does. No separate burn-in phase: each
  phase is its own burn-in (Jun et al.'s Algorithm 2 sizes one with kappa, which we do not know).
- **Means, epsilon >= 0**: the decisions compare the linear predictors (the order of z'theta is the order
  of the means); the stopping rule and the certificate bound mu_j - mu_i for i in the answer and j outside
  by the largest mu(a_j) - mu(a_i) over a_i in I_i, a_j <= hi_j and a_j - a_i <= u (``mean_gap_bound``),
  u the upper bound on (z_j - z_i)'theta*, I_i = [lo_i, hi_i] and hi_j from the intervals of z_i'theta* and
  z_j'theta* of the same phase. The proof of RAGE's module docstring then carries over word for word (its
  event E is the event above, its UCBs these bounds on the means).

- **A second stop, on the likelihood-ratio set** (``_set_stop``). A phase that decides nothing (its outcomes
  separable, so no MLE; or the burn-in unmet on H_low, e.g. a compound with a hit rate near 0 or 1, whose
  mu'_low is tiny: then every phase fails it, and without this the run never stops) closes with a test of
  C_t itself, at the level P_t + log(1 / delta_LR) the slope floor uses: the answer Acc + the m_r arms of
  S_r largest at the set's centre (the MLE of every outcome so far; the surrogate centre when they are
  separable) stops the run when no theta of C_t has mu(z_j'theta) - mu(z_i'theta) > epsilon for an arm i
  of the answer and an arm j outside it (``LikelihoodRatioSet.open_arms`` == 0; exact plane tests, which
  need no MLE). Validity: on the event E_LR = {theta* in C_t for every t} (probability >= 1 - delta_LR,
  the share the delta split above already pays), theta* is such a theta, so mu_j - mu_i <= epsilon for
  every i in the answer and j outside it; some arm of the top m lies outside the answer unless the answer
  is the top m, so every arm of it has mu_i >= mu_(m) - epsilon: (epsilon, m)-correct. E_LR holds at all
  times at once, so the answer and the time of the test may depend on the outcomes in any way. On the
  event of the delta split (every phase's widths and E_LR) a stop by either route is correct:
  P(error) <= delta, unchanged. The certificate of such a stop is epsilon for each arm of that answer
  (``PhaseOrSetRule``; on E_LR it stays true after the stop). Phases that decide are as before (no test),
  and so are runs whose phases all decide (kw_synthetic K = 50, d = 2: the same 20 runs, test for test);
  a run whose burn-in fails on an ordinary instance may stop sooner (the policy records' logistic8 with
  width0 = 4, seed 0, when this stop came in: at 808 tests, after its second undecided phase, instead of 4 624).
  Saturated one-hot instances (hit rates 0.999, 0.5, 0.001; epsilon 0.1) stop at the end of the first
  phase (2 679 tests) instead of never.

Constants. The text of Jun et al. beyond the abstract could not be read in this session (the search tool
returned the first page only), so Theorem 1 is implemented as recalled, taking the larger of the readings
we know of: W = 3.5 multiplying ||y|| sqrt(log) (width^2 = 12.25 ||y||^2 log, against 2 ||y||^2 log for a
Gaussian), the log of 2 (2 + t_eff) / delta', gamma = d + log(6 (2 + t_eff) / delta'). Check them against
the paper before relying on the guarantee; ``tests/test_rage_glm.py`` measures the width's coverage at the
burn-in boundary and the error rate. The cost follows from them: the factor W^2 / 2 = 6.1 on every
direction's tests, and the burn-in's gamma xi^2 >= (d + log(...)) d / mu' (Kiefer-Wolfowitz: some arm
of any design has ||z||^2_{H^-1} >= d / n), which grows like d^2 (docs/lower_bound.md).

Cost per phase: RAGE's design (``phased.elimination``), one MLE of the phase's outcomes, the likelihood-ratio set's
range ends for the design's arms (a few Newton solves each) and O(|S_r|^2 d) for the decisions; a phase that
decides nothing adds the set's test (``open_arms``: O(K d^2) and up to a few hundred Newton solves). The running
predictions of the likelihood-ratio set are made at each phase's close, in growing chunks (a refit,
O(K_+ d^2), per chunk); nothing is computed per test beyond storing its outcome.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from threadpoolctl import threadpool_limits

from screenbai.bandits.core.params import HIT_RATE_EPSILON, like, run_state
from screenbai.bandits.core.registry import register
from screenbai.bandits.numerics.design import kept_by_rounding, spread_order_ranked
from screenbai.bandits.numerics.glm import SeparableDataError, dmu, logistic_mle, mean_gap_bound
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, RunningPredictor, observe_in_chunks
from screenbai.bandits.numerics.ties import top_m
from screenbai.bandits.phased.elimination import PHASE_LOSSES, PhasedElimination, PhaseRule

#: W of Theorem 1 (Jun et al. 2021): |y'(theta_hat - theta*)| <= W ||y||_{H^-1} sqrt(log(2 (2 + t_eff) / delta))
THM1_WIDTH = 3.5
#: the share of delta spent on the likelihood-ratio set that bounds mu' (the rest on the phases' widths)
LR_SHARE = 0.5
#: bisection steps of each range end of z_k'theta over the likelihood-ratio set
_RANGE_STEPS = 5
#: chunks of a told batch grow by this fraction of the outcomes before them (the running predictions)
_CHUNK_GROWTH = 0.1


class PhaseOrSetRule(PhaseRule):
    """RAGE-GLM's stopping rule: PhaseRule's phase bounds, and the likelihood-ratio set's certificate of the
    answer it stopped on, when that set stopped the run (module docstring, "A second stop"). The set's
    certificate names the answer and the epsilon tested (``RAGEGLM._set_certified``); it holds for theta* on
    the set's event whatever comes after, so each arm of that answer is certified at the smaller of the two."""

    name = "phase bounds, or the likelihood-ratio set"

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        out = super().certified_epsilon(answer)
        cert = self.policy._set_certified
        answer = np.asarray(answer)
        if cert is not None and set(answer.tolist()) == set(np.asarray(cert["answer"]).tolist()):
            out = np.minimum(out, float(cert["epsilon"]))
        return out

    def lr_sets(self) -> list[LikelihoodRatioSet]:
        """The likelihood-ratio set of the outcomes in P_t (those of the closed phases and the unplanned ones;
        the open phase's join it when the phase closes), at LR_SHARE delta: it holds theta* at every t with
        probability at least 1 - LR_SHARE delta. None before the first outcome in P_t."""
        return self.policy._lr_set_closed()


@register(
    "rage-glm",
    description="RAGE-GLM (Jun et al. 2021): phased elimination on fixed mu'-weighted XY designs for 0/1 outcomes, "
    "whole plates per phase, each phase's own MLE; delta-correct (best arm, top-m, epsilon on the means) with the "
    "information at theta* bounded over the likelihood-ratio set, so no S, kappa or c_mu.",
)
class RAGEGLM(PhasedElimination):
    """RAGE-GLM, phased elimination on fixed designs (logistic model); see the module docstring.

    Parameters: m, delta, epsilon (on the means), eps_round (rounding slack of the phase size), width0
    (target width of the first phase on the linear predictor, halved each phase; any value keeps the
    guarantee), plate_size (phases rounded up to whole plates).
    """

    name = "rage-glm"
    binary_rewards = True
    epsilon: float = HIT_RATE_EPSILON
    #: the last phase needs margin^2 / (2 ||y||^2_{H^-1}) >= (W^2 / 2) L_r nats (PhaseRule.threshold)
    evidence_factor: ClassVar[float] = 0.5 * THM1_WIDTH**2
    width0: float = like(PhasedElimination.__parameters__["width0"], default=1.0,
                         help="target width of the first phase on the logit scale (halved each phase)")
    # the run's state, beyond RAGE's
    _predictor: RunningPredictor = run_state()  # the predictions made before each outcome, and their loss P_t
    #: the open phase's outcomes, arm k's j-th at ``offset_k + j`` (offsets: the cumulated planned counts)
    phase_outcomes: np.ndarray = run_state()
    #: phases that decided nothing (burn-in unmet on H_low, or separable outcomes)
    _undecided: int = run_state()
    #: the answer the likelihood-ratio set certified and the epsilon it was tested at, when that stopped the run
    _set_certified: dict[str, Any] | None = run_state()
    forecast_caveat: ClassVar[str] = (
        f"{PHASE_LOSSES}; phases that decide nothing (a burn-in unmet) are not counted, nor is the likelihood-ratio "
        "set's test at their close, which can stop a run sooner (the CDK2 arms: at the end of its first phase), so "
        "runs may cost more or less than it says (docs/lower_bound.md)")

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self._predictor = RunningPredictor(self.d_eff)
        self.phase_outcomes = np.zeros(0, dtype=np.int8)
        self._undecided = 0
        self._set_certified = None
        self.stopping_rule = PhaseOrSetRule(self.epsilon, self.delta).attach(self)
        # phases that decided nothing (burn-in unmet on H_low, separable outcomes); per phase the tests its widths
        # and its burn-in asked for; per closed phase the median over the design's arms of mu'_low / mu' at the
        # phase's MLE (the information the likelihood-ratio floor keeps)
        self.diagnostics.update(burn_in_failed=0, size_terms=[], floor_ratio=[])

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    # ------------------------------------------------------------------ levels and sizes
    def _delta_dir(self, r: int, n_active: int) -> float:
        """delta_r: the share of one direction of phase r (module docstring, "Delta split")."""
        n_dirs = n_active * (n_active - 1) // 2 + n_active
        return (1.0 - LR_SHARE) * self.delta * 6.0 / (math.pi**2 * r * r * max(n_dirs, 1))

    def _t_eff(self) -> int:
        """Distinct arms of the open (or just closed) phase's design (K before the first)."""
        support = int(np.count_nonzero(self.planned if self.planned.any() else self.phase_counts))
        return support or self.K

    def level(self, r: int, n_active: int, t_eff: int | None = None) -> float:
        """L_r = log(2 (2 + t_eff) / delta_r) (Theorem 1's log, module docstring)."""
        t = self._t_eff() if t_eff is None else t_eff
        return math.log(2.0 * (2.0 + t) / self._delta_dir(r, n_active))

    def gamma(self, r: int, n_active: int, t_eff: int) -> float:
        """The burn-in's gamma = d + log(6 (2 + t_eff) / delta_r) (Theorem 1's condition xi^2 <= 1 / gamma)."""
        return self.d_eff + math.log(6.0 * (2.0 + t_eff) / self._delta_dir(r, n_active))

    def _plan_theta(self) -> np.ndarray:
        """The estimate the design weighs the arms with: the ridge fit (prior precision 1) of all outcomes."""
        return self._predictor.theta[int(np.argmin(np.abs(self._predictor.lams - 1.0)))]

    def _design_features(self) -> np.ndarray:
        return self.Z * np.sqrt(dmu(self.Z @ self._plan_theta()))[:, None]

    def target_width(self, r: int) -> float:
        """beta_r = width0 2^-(r - 1 - u), u the phases before r that decided nothing, at most 2 of them: a phase
        whose burn-in failed on H_low (typically the first, sized at theta = 0) is repeated at the same width with
        the estimate it gave, instead of a width half as large (4 times the tests); after two such repeats the
        widths halve again, so the phases keep growing. Measured on the CDK2 potency arms (seed 0): 247 736 tests
        against 822 681 when every phase halves."""
        return self.width0 * 2.0 ** (-(r - 1 - min(self._undecided, 2)))

    def phase_size(self, r: int, rho: float, n_active: int, w: np.ndarray | None = None) -> int:
        """n_r = max((1 + eps_round) W^2 rho_r L_r / beta_r^2, (1 + eps_round) gamma xi_r^2, d), at the plug-in
        information, t_eff the design's support (module docstring)."""
        if w is None:
            return super().phase_size(r, rho, n_active)
        beta = self.target_width(r)
        support = np.flatnonzero(kept_by_rounding(w))  # the arms the rounding tests (a weight of 1e-5 gets none)
        t_eff = max(int(support.size), 1)
        n = (1.0 + self.eps_round) * THM1_WIDTH**2 * rho * self.level(r, n_active, t_eff) / beta**2
        Zd = self._design_features()
        A = (Zd[support].T * w[support]) @ Zd[support]
        Zs = self.Z[support]
        xi2 = float(np.max(np.einsum("ij,ji->i", Zs, np.linalg.lstsq(A, Zs.T, rcond=None)[0])))
        burn_in = (1.0 + self.eps_round) * self.gamma(r, n_active, t_eff) * xi2
        self.diagnostics["size_terms"].append([round(n), round(burn_in)])  # (widths, burn-in), for the docs
        return max(math.ceil(max(n, burn_in)), self.d_eff)

    def _complete(self, counts: np.ndarray) -> np.ndarray:
        """Tests that bring every arm of the rounded design to the burn-in at the plug-in information: an arm the
        design barely weighs (a spanning arm, in no direction of Y(S_r)) but tests once fails xi^2 <= 1 / gamma
        on its own, so the phase would decide nothing; sizing the whole phase for it instead asked for 2 million
        tests where the widths needed 6 570 (3 one-hot arms). An arm k with s_k = z_k'A^-1 z_k above the target
        t = 1 / ((1 + eps_round) gamma) gets (1/t - 1/s_k) / mu'_k more tests: alone that brings s_k to t
        (Sherman-Morrison), and the others' added tests only lower it. Fixed before the phase's outcomes, like the
        design, so the guarantee is unchanged (the check at the close is on H_low, as before)."""
        support = np.flatnonzero(counts)
        Zs = self.Z[support]
        slope = dmu(Zs @ self._plan_theta())
        A = (Zs.T * (counts[support] * slope)) @ Zs
        if np.linalg.matrix_rank(A) < self.d_eff:
            return counts
        s = np.einsum("ij,ji->i", Zs, np.linalg.solve(A, Zs.T))
        t_eff = int(support.size)
        target = 1.0 / ((1.0 + self.eps_round) * self.gamma(self.phase + 1, self.active.size, t_eff))
        short = s > target
        if short.any():
            counts = counts.copy()
            counts[support[short]] += np.ceil((1.0 / target - 1.0 / s[short]) / slope[short]).astype(np.int64)
        return counts

    # ------------------------------------------------------------------ outcomes
    def _unplanned_outcomes(self, arms: np.ndarray, rewards: np.ndarray, batch_arms: np.ndarray,
                            batch_rewards: np.ndarray) -> None:
        """Outcomes no phase planned (a campaign's past at a change, its replicate wells) join the
        likelihood-ratio set's P_t (predicted in growing chunks, each from the outcomes before it in P_t: the
        set stays valid for any adapted order, lr_set) and the plug-in fit the designs use; never a phase's
        MLE. The open phase's outcomes told so far (and ``batch_*``, those of this tell) are not in P_t yet
        (they are predicted when the phase closes), so they are left out of the counts here."""
        open_phase = self.planned.any()  # a closed phase's outcomes are in P_t already
        n = (self.n - (self.phase_counts if open_phase else 0)).astype(float)
        s = self.sums - (self.phase_sums if open_phase else 0.0)
        np.subtract.at(n, batch_arms, 1.0)
        np.subtract.at(s, batch_arms, batch_rewards)
        observe_in_chunks(self._predictor, self.Z, n, s, arms, rewards, int(n.sum()) - arms.size, self.d_eff,
                          _CHUNK_GROWTH)
        pulled = np.flatnonzero(n)
        self._predictor.refit(self.Z[pulled], n[pulled], s[pulled])

    def _record(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Keep each outcome at its place in the phase (arm k's j-th outcome, in the order told), then RAGE's
        bookkeeping (which closes the phase with its last outcome)."""
        if not self.phase_counts.any():  # the phase's first outcomes
            self.phase_outcomes = np.zeros(int(self.planned.sum()), dtype=np.int8)
        offset = np.concatenate([[0], np.cumsum(self.planned)[:-1]])
        order = np.argsort(arms, kind="stable")
        sorted_arms = arms[order]
        first = np.searchsorted(sorted_arms, sorted_arms, side="left")
        rank = np.empty(arms.size, dtype=np.int64)
        rank[order] = np.arange(arms.size) - first  # j among this batch's outcomes of the same arm
        place = offset[arms] + self.phase_counts[arms] + rank
        ok = self.phase_counts[arms] + rank < self.planned[arms]  # beyond the design: RAGE's _update refuses it
        self.phase_outcomes[place[ok]] = rewards[ok] > 0.5
        super()._record(arms, rewards)

    def _predict_phase(self) -> None:
        """Add the closed phase's outcomes to the likelihood-ratio set's P_t (lr_set) and refit the predictor.
        They are predicted in an order fixed by the design alone -- arm k's j-th outcome at (j + 1/2) / n_k
        of the phase, ties by arm -- in growing chunks, each from the outcomes before it
        (``lr_set.observe_in_chunks``): given the design the outcomes are independent, so any order that
        does not look at their values keeps exp(L_t(theta*) - P_t) a martingale; this one does not depend
        on the order the outcomes were told either (plates, retests)."""
        arm, j = spread_order_ranked(self.phase_counts)
        offset = np.concatenate([[0], np.cumsum(self.planned)[:-1]])
        outcome = self.phase_outcomes[offset[arm] + j].astype(float)
        observe_in_chunks(self._predictor, self.Z, self.n, self.sums, arm, outcome,
                          self.n_samples - arm.size, self.d_eff, _CHUNK_GROWTH)
        pulled = np.flatnonzero(self.n)
        self._predictor.refit(self.Z[pulled], self.n[pulled], self.sums[pulled])

    def _lr_set(self) -> LikelihoodRatioSet:
        """C_t: the likelihood-ratio set of every outcome so far at level P_t + log(1 / delta_LR) (without a
        minimiser when they are separable: lr_set.py)."""
        pulled = np.flatnonzero(self.n)
        level = self._predictor.loss + math.log(1.0 / (LR_SHARE * self.delta))
        return LikelihoodRatioSet(self.Z[pulled], self.n[pulled], self.sums[pulled], level, self._plan_theta())

    def _lr_set_closed(self) -> list[LikelihoodRatioSet]:
        """``_lr_set`` of the outcomes whose predictions are in P_t (``_unplanned_outcomes``: the open phase's
        are predicted when it closes), as a list (empty before the first such outcome)."""
        open_phase = self.planned.any()
        n = (self.n - (self.phase_counts if open_phase else 0)).astype(float)
        s = self.sums - (self.phase_sums if open_phase else 0.0)
        pulled = np.flatnonzero(n)
        if not pulled.size:
            return []
        level = self._predictor.loss + math.log(1.0 / (LR_SHARE * self.delta))
        return [LikelihoodRatioSet(self.Z[pulled], n[pulled], s[pulled], level, self._plan_theta())]

    def _slope_floor(self, support: np.ndarray) -> np.ndarray | None:
        """mu'_low,k for the arms ``support``: the smallest slope over the likelihood-ratio set of every
        outcome so far at level P_t + log(1 / delta_LR); None when the set is unbounded (separable outcomes)."""
        cs = self._lr_set()
        if not cs.bounded or cs.empty:  # empty: theta* is outside it, an event the delta split already pays
            return None
        far = np.array([max(abs(cs._range_end(self.Z[k], lower=True, steps=_RANGE_STEPS)),
                            abs(cs._range_end(self.Z[k], lower=False, steps=_RANGE_STEPS))) for k in support])
        return dmu(far)

    def _fit_phase(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The phase's MLE and P = H_low^-1, when the burn-in condition holds on H_low (module docstring);
        None otherwise (no decision this phase). Small matrices: one BLAS thread (threads only add overhead and,
        on a loaded machine, made a d = 2 run 4 times slower)."""
        with threadpool_limits(limits=1):
            return self._fit_phase_now()

    def _fit_phase_now(self) -> tuple[np.ndarray, np.ndarray] | None:
        self._predict_phase()
        support = np.flatnonzero(self.phase_counts)
        Zs = self.Z[support]
        if support.size < self.d_eff or np.linalg.matrix_rank(Zs) < self.d_eff:
            return None
        try:
            theta = logistic_mle(Zs, self.phase_counts[support], self.phase_sums[support], 0.0).theta
        except SeparableDataError:
            self._undecided_phase()
            return None
        slope = self._slope_floor(support)
        if slope is None:
            self._undecided_phase()
            return None
        self.diagnostics["floor_ratio"].append(float(np.median(slope / dmu(Zs @ theta))))
        H = (Zs.T * (self.phase_counts[support] * slope)) @ Zs
        P = np.linalg.inv(H)
        xi2 = float(np.max(np.einsum("ij,ji->i", Zs, P @ Zs.T)))
        if xi2 > 1.0 / self.gamma(self.phase, self.active.size, int(support.size)):
            self._undecided_phase()
            return None
        return theta, P

    def _undecided_phase(self) -> None:
        self._undecided += 1
        self.diagnostics["burn_in_failed"] = self._undecided

    def _close_phase(self) -> None:
        """RAGE's close of the phase; then, if the phase decided nothing (separable outcomes, or the burn-in
        unmet on H_low), the second stop: the likelihood-ratio set's test of the best-estimated answer (module
        docstring, "A second stop"). Phases that decide are left as RAGE's."""
        undecided = self._undecided
        super()._close_phase()
        if self._undecided > undecided and self._answer is None:
            with threadpool_limits(limits=1):
                self._set_stop()

    def _set_stop(self) -> None:
        """Stop on Acc + the m_r arms of S_r best at the set's centre (the MLE of every outcome, or the
        surrogate centre of separable ones) when C_t rules out, for that answer, every other arm
        (``LikelihoodRatioSet.open_arms`` == 0 at this epsilon)."""
        cs = self._lr_set()
        m_r = self.m - self.accepted.size
        if m_r <= 0:
            answer = self.accepted[: self.m].copy()
        else:
            pred = self.Z[self.active] @ cs.theta
            pick = top_m(pred, m_r, np.random.default_rng(self.phase))
            answer = np.concatenate([self.accepted, self.active[pick]]).astype(np.int64)
        if cs.open_arms(self.Z, answer, self.epsilon) == 0:
            self._answer = answer
            self._set_certified = {"answer": answer.copy(), "epsilon": float(self.epsilon)}
            self.diagnostics["stopped_by"] = "likelihood-ratio set"

    def _width_scale(self, last: dict[str, Any]) -> float:
        """w_r(y) = W sqrt(L_r) ||y||_P (Theorem 1 with H_low)."""
        return THM1_WIDTH * math.sqrt(last["level"])

    def _mean_gap_bound(self, i: int, js: np.ndarray, ucb: np.ndarray) -> np.ndarray:
        """Bounds on mu_j - mu_i from the bound ``ucb`` on (z_j - z_i)'theta* and the arms' own intervals
        of the same phase (``mean_gap_bound``)."""
        assert self._last is not None
        theta, P = self._last["theta"], self._last["P"]
        scale = self._width_scale(self._last)

        def interval(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            Zr = self.Z[rows]
            half = scale * np.sqrt(np.maximum(np.einsum("ij,ij->i", Zr @ P, Zr), 0.0))
            return Zr @ theta - half, Zr @ theta + half

        lo_i, hi_i = interval(np.array([i]))
        return mean_gap_bound(ucb, float(lo_i[0]), float(hi_i[0]), interval(js)[1])

    def _phase_model(self) -> tuple[str, tuple[str, ...]] | None:
        return "the logistic model on these features (Jun et al. 2021, Theorem 1, constants as read here)", ()
