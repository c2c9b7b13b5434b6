"""The GIFA family's confidence sets as a stopping rule (core/parts.py): ridge ellipsoids with the
thresholds of thresholds.py, or per-arm intervals for classical indices.

With threshold factor f_s (``RidgeRule.factor``, s the observations so far) the set bounds every gap,
mu_j - mu_i <= B[j, i] = mu_hat_j - mu_hat_i + W(j, i), with W(j, i) = f_s ||x_i - x_j||_{(V^lambda)^-1}
(paired indices), f_s (||x_i|| + ||x_j||) (individual) or f_s (1/sqrt(N_i) + 1/sqrt(N_j)) (classical)
([RKD21] sec. 1.5; gap_indices.py). The thresholds: "theoretical" ([RKD21] eq. (2)), "abbasi-yadkori"
([XHS18] eq. 3, at the level delta / K^2 or delta), "lucb1", "hoeffding" (rewards in [0, 1]) and the
unguaranteed "heuristic".

The rule reads the GIFA policy's gap indices and ridge estimator when it has them (one estimate for
sampling and stopping); attached to any other policy (``rules.compose.with_stopping``) it keeps its own
ridge estimate of every outcome, saved with the policy's state. Its test is the certificate's (stop when
every arm of the answer is certified epsilon-good: the tau^UGapE statistic of the answer); GIFA's round
computes its own tau^LUCB or tau^UGapE statistic with the same factor in the same pass as J(t), b_t, c_t.
"""

from __future__ import annotations

import numpy as np

from screenbai.bandits.certainty.certificate import certified_from_bounds, norm_bound_refuted
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.linear.gap_indices import GapIndices
from screenbai.bandits.numerics import thresholds as th
from screenbai.bandits.numerics.estimators import TrackedRidgeState


class RidgeRule(StoppingRule):
    """The confidence set of GIFA's gap indices with threshold ``threshold`` (see the module docstring).

    sigma: sub-Gaussian noise scale; S: bound on ||theta*||; norm_bound: L >= max ||x_a||; lambda_reg:
    ridge penalty; d: dimension of the features the policy uses (its Z); K, m; index: "paired",
    "individual" or "classical"; paper_literal: the theoretical threshold as printed; delta_eff: the
    Abbasi-Yadkori level, "pairs" (delta / K^2) or "ellipsoid" (delta); refresh_every: exact rebuilds of
    the rule's own estimator (when the policy has none).
    """

    name = "ridge"

    def __init__(self, threshold: str, *, epsilon: float, delta: float, sigma: float, S: float, norm_bound: float,
                 lambda_reg: float, d: int, K: int, m: int = 1, index: str = "paired", paper_literal: bool = False,
                 delta_eff: str = "pairs", refresh_every: int = 2000):
        super().__init__(epsilon, delta)
        self.threshold_name, self.sigma, self.S, self.norm_bound = threshold, float(sigma), float(S), float(norm_bound)
        self.lambda_reg, self.d, self.K, self.m, self.index = float(lambda_reg), int(d), int(K), int(m), index
        self.paper_literal, self.refresh_every = bool(paper_literal), int(refresh_every)
        self.linear = index != "classical"
        self.delta_level = th.effective_delta(self.delta, self.K, delta_eff)  # delta / K^2 or delta
        self.gaps: GapIndices | None = None
        #: the rule's own ridge estimate of every outcome, when the policy has no gap indices
        self._own: TrackedRidgeState | None = None

    def attach(self, policy) -> RidgeRule:
        super().attach(policy)
        gaps = getattr(policy, "gaps", None)
        if not isinstance(gaps, GapIndices):  # another sampling rule: an estimate of the rule's own
            self._own = TrackedRidgeState(policy.Z, self.lambda_reg, self.refresh_every) if self.linear else None
            gaps = GapIndices(policy.Z, self._own, self.index, self.m, "empirical", "lucb", "lucb")
        self.gaps = gaps
        return self

    def _gaps(self) -> GapIndices:
        assert self.gaps is not None, "attach the rule to its policy first"
        return self.gaps

    # ------------------------------------------------------------------ the set
    def factor(self, s: int) -> float:
        """f_s: widths are f_s ||y||_P (linear) or f_s / sqrt(N_a) (classical)."""
        name = self.threshold_name
        if name == "theoretical":
            c = th.reda_theoretical(
                s, self.delta, self.d, self.norm_bound, self.S, self.sigma, self.lambda_reg, self.paper_literal
            )
            return self.sigma * c
        if name == "heuristic":
            return self.sigma * th.reda_heuristic(s, self.delta)
        if name == "abbasi-yadkori":
            logdet = self._gaps().ridge().logdet
            return th.abbasi_yadkori(logdet, self.d, self.lambda_reg, self.sigma, self.S, self.delta_level)
        if name == "lucb1":
            return th.lucb1_factor(s, self.delta, self.K, self.sigma)
        return th.hoeffding_factor(s, self.delta, self.K)

    def means(self) -> np.ndarray:
        """Estimated means: ridge x_a^T theta_hat (linear) or empirical means (classical)."""
        if self.linear:
            return self._gaps().ridge().mu
        return self.policy.sums / np.maximum(self.policy.n, 1)

    def observe(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        if self._own is None:
            return
        if arms.size == 1:
            self._own.update(int(arms[0]), float(rewards[0]))
        else:
            self._own.update_many(arms, rewards)

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """eq. (1) of certainty/certificate.py with the gap indices: U(i, j) = B[j, i] = mu_j - mu_i + W(j, i)
        at the threshold factor f_s of the recorded outcomes (s = n_samples), for the answer's arms against
        every arm. Classical indices hold nothing about an arm without a test (its width is infinite).
        O(m K d)."""
        A = np.asarray(answer, dtype=np.int64)
        n = self.policy.n
        U = self._gaps().bounds_against(self.means(), A, self.factor(self.policy.n_samples), n)
        if not self.linear:
            untested = n == 0
            U[:, untested] = np.inf
            U[untested[A]] = np.inf
            U[np.arange(A.size), A] = -np.inf
        return certified_from_bounds(U, self.m)

    def model(self) -> tuple[str, tuple[str, ...]]:
        noise = f"noise sub-Gaussian with scale sigma = {self.sigma:g}"
        if not self.linear:
            if self.threshold_name == "hoeffding":
                return "independent arms with outcomes in [0, 1] (no model of the features)", ()
            return f"independent arms (no model of the features), {noise}", ()
        model = f"the linear-Gaussian model on these features, {noise}"
        if self.threshold_name not in ("theoretical", "abbasi-yadkori"):
            return model, ()
        st = self._gaps().ridge()
        low = norm_bound_refuted(st.theta, st.P, self.factor(self.policy.n_samples), self.S)
        caveats = () if low is None else (
            f"the outcomes refute ||theta|| <= S = {self.S:g} (every theta of the confidence set has norm >= "
            f"{low:.3g}): pass a larger S",)
        return f"{model}, ||theta|| <= S = {self.S:g}", caveats

    # ------------------------------------------------------------------ state: the own estimator only
    def state_dict(self) -> dict:
        return {} if self._own is None else {"_own": self._own}

    def load_state_dict(self, state: dict) -> None:
        if ("_own" in state) != (self._own is not None):
            raise ValueError("this ridge rule's state does not match its policy; was it built the same way?")
