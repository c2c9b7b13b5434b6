"""The GIFA family: LinGapE, m-LinGapE, LinGIFA, and classical LUCB / UGapE.

One engine, ``GIFA`` ([RKD21] Alg. 1), parameterised by compute_Jt, compute_bt, the selection
rule, the stopping rule and the index type; the registered algorithms are thin subclasses that
fix those choices and their defaults.

The gap indices and the round computed from them (J(t), b_t, c_t, the stopping statistic) live
in ``gap_indices.py``; the confidence set and its threshold, the policy's stopping rule (core/parts.py)
and the source of its certificate, in ``confidence.py``; this module holds the parameters, the
selection rule and the ask/tell loop.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from screenbai.bandits.core.params import (
    BOOLEAN,
    DELTA,
    EPSILON,
    L_BOUND,
    LAMBDA_REG,
    REFRESH_EVERY,
    S_BOUND,
    SIGMA,
    M,
    Options,
    like,
    param,
    pinned,
    run_state,
)
from screenbai.bandits.core.policy import Policy
from screenbai.bandits.core.registry import register
from screenbai.bandits.linear.confidence import RidgeRule
from screenbai.bandits.linear.gap_indices import GapIndices, max_m_per_column
from screenbai.bandits.numerics.estimators import PlateDesign, TrackedRidgeState
from screenbai.bandits.numerics.linalg import project, refuse_quadratic, spanning_arms
from screenbai.bandits.numerics.rules import L1Design, greedy_arm, largest_variance_arm
from screenbai.bandits.numerics.ties import top_m

COMPUTE_JT = ("empirical", "ugape")
COMPUTE_BT = ("lucb", "gifa")
STOPPING = ("lucb", "ugape")
INDICES = ("paired", "individual", "classical")
SELECTIONS = ("greedy", "optimized", "ratio", "largest-variance", "both")
INITS = ("auto", "all", "span", "none", True, False)
INIT_ALL_MAX_K = 10_000  # "auto" pulls every arm once up to this K, a spanning set above
LINEAR_THRESHOLDS = ("theoretical", "heuristic", "abbasi-yadkori")
CLASSICAL_THRESHOLDS = ("lucb1", "heuristic", "hoeffding")


class GIFA(Policy):
    """Generic GIFA loop for fixed-confidence Top-m identification ([RKD21] Alg. 1).

    Parameters
    ----------
    m : number of arms to identify (1 <= m < K).
    epsilon : tolerance (>= 0); stop when the stopping statistic is <= epsilon.
    delta : confidence level in (0, 1).
    sigma : sub-Gaussian scale of the noise (R in [XHS18]); "oracle" in simulations.
    S : bound on ||theta*|| (theoretical and Abbasi-Yadkori thresholds); "oracle" -> ||theta*||.
    L : bound on ||x_a||; default max_a ||x_a||.
    lambda_reg : ridge penalty, V_0 = lambda_reg I.
    threshold : "theoretical" (1.5(c)), "heuristic" (1.5(d)), "abbasi-yadkori" (1.5(b)) for linear
        indices; "lucb1" (1.5(e)), "heuristic", "hoeffding" (rewards in [0, 1]) for classical ones.
    paper_literal : theoretical threshold exactly as printed in [RKD21] (lambda^2 inside the log, sqrt(lambda) outside).
    delta_eff : Abbasi-Yadkori level: "pairs" = delta / K^2 (default), "ellipsoid" = delta.
    index : "paired", "individual" or "classical" (empirical means, no features).
    compute_jt : "empirical" (top-m empirical means) or "ugape" (argmin^[m]_j max^m_{i!=j} B[i, j]).
    compute_bt : "lucb" (argmax_{j in J} max_{i not in J} B[i, j]) or "gifa" (argmax_{j in J} max^m_{i!=j}).
    stopping : "lucb" (tau^LUCB) or "ugape" (tau^UGapE).
    selection : "greedy" (1.6(i)), "optimized" (L1 ratio rule, 1.6(ii)), "largest-variance" (1.6(iii)),
        or "both" (pull b_t and c_t in one round: ask() returns two arms).
    init : the first pulls, returned by the first ask() as one batch: "all" (every arm once, as
        [RKD21]; also True), "span" (a maximal linearly independent set of arms, d' pulls: what the
        model needs when K >> d), "none" (also False), or "auto": "all" up to K = 10^4 arms, "span"
        above (classical indices always pull every arm).
    refresh_every : exact rebuild of P every so many pulls (bounds round-off drift).

    Features whose rank is below d are projected onto their span first; d' = rank(X)
    then replaces d in the thresholds.  The recommendation is the current J(t) (when the run is
    cut by ``max_samples`` it is recomputed from the data, e.g. the empirical best for LinGapE).
    """

    name = "gifa"
    m: int = M
    epsilon: float = EPSILON
    delta: float = DELTA
    sigma: float = like(SIGMA, default=0.5)
    S: float = S_BOUND
    #: None: the largest ||x_a|| (``norm_bound`` holds the bound used)
    L: float | None = L_BOUND
    lambda_reg: float = LAMBDA_REG
    threshold: str = param(
        "theoretical",
        Options(LINEAR_THRESHOLDS + CLASSICAL_THRESHOLDS[:1] + CLASSICAL_THRESHOLDS[2:]),
        "confidence threshold (linear: theoretical, heuristic, abbasi-yadkori; "
        "classical: lucb1, heuristic, hoeffding); 'heuristic' has no guarantee",
        no_guarantee=("heuristic",),
    )
    paper_literal: bool = param(False, BOOLEAN, "theoretical threshold exactly as printed in [RKD21]")
    #: "pairs" or "ellipsoid" (``confidence.delta_level`` holds the level it gives: delta / K^2 or delta)
    delta_eff: str = param(
        "pairs", Options(("pairs", "ellipsoid")), "Abbasi-Yadkori level: delta / K^2 (pairs) or delta"
    )
    index: str = param("paired", Options(INDICES), "gap indices: paired, individual or classical (no features)")
    compute_jt: str = param("empirical", Options(COMPUTE_JT), "candidate set J(t)")
    compute_bt: str = param("lucb", Options(COMPUTE_BT), "challenger b_t")
    stopping: str = param("lucb", Options(STOPPING), "stopping statistic")
    selection: str = param("greedy", Options(SELECTIONS), "arm-selection rule for the pair (b_t, c_t)")
    init: str | bool = param("auto", Options(INITS), "first pulls: 'all' arms once ([RKD21]), a 'span'ning set of "
                             "d arms, 'none', or 'auto' (all up to K = 10^4, else span); True/False mean all/none")
    refresh_every: int = REFRESH_EVERY
    renamed = {"lambda0": "lambda_reg", "R": "sigma", "rule": "selection"}

    # the run's state
    state: TrackedRidgeState | None = run_state()  # None with classical indices
    _design: L1Design | None = run_state()  # the ratio rule's LP cache
    _init_todo: bool = run_state()
    _init_arms: np.ndarray = run_state()  # the first pulls, once chosen
    _J: np.ndarray | None = run_state()
    _J_at: int = run_state()
    _rounds: int = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.epsilon, self.delta, self.sigma, self.S = p.epsilon, p.delta, p.sigma, p.S
        self.index, self.compute_jt, self.compute_bt, self.stopping = p.index, p.compute_jt, p.compute_bt, p.stopping
        self.selection = "optimized" if p.selection == "ratio" else p.selection
        self.linear = self.index != "classical"
        allowed = LINEAR_THRESHOLDS if self.linear else CLASSICAL_THRESHOLDS
        if p.threshold not in allowed:
            raise ValueError(
                f"threshold (with {self.index} indices) must be one of {', '.join(map(repr, allowed))}; "
                f"got {p.threshold!r}"
            )
        self.threshold = p.threshold
        if not self.linear and self.selection in ("greedy", "optimized"):
            raise ValueError(
                f"selection {p.selection!r} needs linear indices; classical indices allow 'largest-variance' or 'both'"
            )
        self.paper_literal = p.paper_literal
        self.lambda_reg = p.lambda_reg
        norms = np.sqrt(np.einsum("ij,ij->i", self.X, self.X))
        self.norm_bound = float(norms.max()) if p.L is None else p.L  # L, or max ||x_a||

        # features in an orthonormal basis of their span; classical indices ignore features
        Z, Q = project(self.X) if self.linear else (self.X, None)
        self.Z, self.Q = (self.X, None) if Z.shape[1] == self.d else (np.ascontiguousarray(Z), Q)
        self.d_eff = self.Z.shape[1]

        # classical widths 1/sqrt(N_a) are infinite before the first pull: classical indices always init
        init = {True: "all", False: "none"}.get(p.init, p.init) if self.linear else "all"
        if init == "auto":
            init = "all" if self.K <= INIT_ALL_MAX_K else "span"
        self.init = init
        fast = self.compute_jt == "empirical" and self.compute_bt == "lucb" and self.stopping == "lucb"
        full_gram = self.linear and not fast and self.index == "paired"
        if full_gram:
            refuse_quadratic(f"{self.name} (paired indices, UGapE-type J or stopping)", self.K,
                             "the Gram matrix X P X^T", "m-LinGapE (same paired indices, O(K d) per round), "
                             "or index='individual'")
        self.state = (
            TrackedRidgeState(self.Z, self.lambda_reg, p.refresh_every, gram=full_gram) if self.linear else None
        )
        self.gaps = GapIndices(self.Z, self.state, self.index, self.m, self.compute_jt, self.compute_bt, self.stopping)
        # the stopping rule's confidence set (confidence.py), on the same gap indices and estimator
        self.confidence = RidgeRule(
            self.threshold, epsilon=self.epsilon, delta=self.delta, sigma=self.sigma, S=self.S,
            norm_bound=self.norm_bound, lambda_reg=self.lambda_reg, d=self.d_eff, K=self.K, m=self.m,
            index=self.index, paper_literal=self.paper_literal, delta_eff=p.delta_eff, refresh_every=p.refresh_every,
        )
        self.stopping_rule = self.confidence.attach(self)
        self._design = L1Design(self.Z) if self.selection == "optimized" else None
        self._init_todo = self.init != "none"
        self._init_arms = np.empty(0, dtype=np.int64)  # the first pulls, once chosen
        self._plate = PlateDesign()
        self._plate_n: np.ndarray | None = None  # per-arm counts with the tests in flight, while choosing a well
        self._J = None
        self._J_at = -1
        self._rounds = 0
        self._reward_range = (0.0, 1.0) if self.threshold == "hoeffding" else None
        self.diagnostics.update(rounds=0, stat=np.nan, threshold_factor=np.nan, dim=self.d_eff)

    # ------------------------------------------------------------------ oracle constants
    @classmethod
    def resolve_oracle(cls, key: str, instance):
        """Oracle values for simulations: S = ||theta*||, sigma/R = the noise scale, L = max ||x_a||."""
        if key == "S":
            if instance.theta is None:
                raise ValueError(f"S='oracle' needs an instance with a true theta; {instance.name} has none")
            return float(np.linalg.norm(instance.theta))
        if key in ("sigma", "R"):
            return 0.5 if instance.reward == "bernoulli" else float(instance.sigma)
        if key == "L":
            return float(np.linalg.norm(instance.features, axis=1).max())
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    # ------------------------------------------------------------------ thresholds and estimates
    def threshold_factor(self, s: int) -> float:
        """f_s of the stopping rule's confidence set (``RidgeRule.factor``): widths are f_s ||y||_P
        (linear) or f_s / sqrt(N_a) (classical)."""
        return self.confidence.factor(s)

    def _ridge(self) -> TrackedRidgeState:
        """The ridge estimator: linear indices only (the classical ones keep per-arm means)."""
        return self.gaps.ridge()

    def means(self) -> np.ndarray:
        """Estimated means: ridge x_a^T theta_hat (linear) or empirical means (classical)."""
        return self.confidence.means()

    def index_matrix(self, mu: np.ndarray, f: float) -> np.ndarray:
        """The full K x K matrix B[i, j] (diagonal -inf): O(K^2)."""
        return self.gaps.index_matrix(mu, f, self.n)

    # ------------------------------------------------------------------ the GIFA round
    def gifa_round(self) -> tuple[np.ndarray, int, int, float]:
        """Compute J(t), b_t, c_t and the stopping statistic from the current data ([RKD21] Alg. 1)."""
        f = self.threshold_factor(self.n_samples)
        self.diagnostics["threshold_factor"] = f
        return self.gaps.round(self.means(), f, self._design_counts(), self.rng)

    def _design_counts(self) -> np.ndarray:
        """Per-arm test counts of the design: recorded, plus those in flight while a plate is chosen."""
        return self.n if self._plate_n is None else self._plate_n

    def select_arm(self, b: int, c: int):
        """The selection rule applied to (b_t, c_t)."""
        rule = self.selection
        if rule == "greedy":
            st = self._ridge()
            if st.source.large and self.gaps.single_paired:  # large K: one pass, reused by the update
                return self.gaps.greedy_pair_arm(b, c, self.rng)
            known, self.gaps.Pxb = self.gaps.Pxb, None
            if known is not None and known[0] == b:  # P x_b is known from this round's Gram row
                Py = known[1] - st.P @ self.Z[c]
            else:
                Py = st.P @ (self.Z[b] - self.Z[c])
            return greedy_arm(st, None, self.rng, Py=Py)
        if self._design is not None:  # rule "optimized"
            arm = self._design.ratio_arm((b, c), self.Z[b] - self.Z[c], self._design_counts(), self.rng)
            self.diagnostics["lp_solved"] = self._design.n_solved
            return arm
        if rule == "both":
            return np.array([b, c]) if self.max_samples - self.n_samples >= 2 else b
        # classical indices: the less-sampled arm has the larger width
        variances = self._ridge().diag if self.linear else -self._design_counts()
        return largest_variance_arm(variances, b, c, self.rng)

    def _select(self):
        if self.m >= self.K:  # K = m = 1: nothing to identify
            return None
        if self._init_todo:
            self._init_todo = False
            first = np.arange(self.K) if self.init == "all" else spanning_arms(self.Z)
            self._init_arms = first[: self.max_samples - self.n_samples].copy()
            return self._init_arms
        if self.n_in_flight:
            return self._select_for_plate()
        stop, b, c = self._recorded_round()
        return None if stop else self.select_arm(b, c)

    def _recorded_round(self) -> tuple[bool, int, int]:
        """The round on recorded outcomes: J(t) and the stopping statistic; (stop?, b_t, c_t)."""
        J, b, c, stat = self.gifa_round()
        self._J, self._J_at = J, self.n_samples
        self._rounds += 1
        self.diagnostics["rounds"] = self._rounds
        self.diagnostics["stat"] = stat
        return stat <= self.epsilon, b, c

    def _stops_now(self) -> bool:
        """The stopping rule on recorded outcomes, once per new outcome, after the first pulls."""
        if self._J_at == self.n_samples or self._init_todo or not self.n[self._init_arms].all():
            return False
        return self._recorded_round()[0]

    def _select_for_plate(self):
        """One more well while tests are in flight: the stopping rule on recorded outcomes (once per
        new outcome), then (b_t, c_t) and the arm from widths whose design counts the tests in flight."""
        if self._stops_now():
            return None
        recorded = self.state
        flight = self.in_flight
        self._plate_n = self.n + flight
        if self.linear:
            self.state = self.gaps.state = self._plate.of(self._ridge(), self.n_samples, flight)
        try:
            _, b, c, _ = self.gifa_round()
            return self.select_arm(b, c)
        finally:
            self.state = self.gaps.state = recorded
            self._plate_n = None

    def _after_load(self) -> None:
        self._plate = PlateDesign()

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        if self._reward_range is not None and (rewards.min() < 0.0 or rewards.max() > 1.0):
            raise ValueError(f"threshold 'hoeffding' assumes rewards in [0, 1]; got {rewards.tolist()}")
        if self.linear:
            product = self.gaps.product_for(int(arms[0]) if arms.size == 1 else -1)
            state = self._ridge()
            if arms.size == 1:
                ahead = None
                if state.source.large:  # large K
                    ahead = self.gaps.sweep_ahead(lambda: self.threshold_factor(self.n_samples),
                                                  guess=self.selection == "greedy")
                state.update(int(arms[0]), float(rewards[0]), on_block=ahead, product=product)
            else:
                state.update_many(arms, rewards)

    def _recommend(self, rng):
        if self.m >= self.K:
            return np.arange(self.K)
        if self._J is not None and self._J_at == self.n_samples:
            return self._J
        if self.compute_jt == "empirical":
            return top_m(self.means(), self.m, rng)
        B = self.index_matrix(self.means(), self.threshold_factor(self.n_samples))
        return top_m(-max_m_per_column(B, self.m), self.m, rng)


# ---------------------------------------------------------------------- registered algorithms
_RATIO = ("greedy", "ratio", "optimized")


@register("lingape")
class LinGapE(GIFA):
    """LinGapE ([XHS18]): m = 1, Abbasi-Yadkori threshold, each arm pulled once first.

    selection: "greedy" (default) or "ratio" (the L1-LP ratio rule, alias "optimized").
    sigma: sub-Gaussian noise scale; S >= ||theta*|| ("oracle" in simulations); lambda_reg: ridge
    (lost in the paper, 1 by default); delta_eff: "pairs" (delta/K^2, default) or "ellipsoid".
    Run with ``max_samples`` as a budget, result().recommendation is the empirical best arm.
    """

    name = "lingape"
    m: int = pinned(1)
    sigma: float = like(SIGMA, default=1.0)
    threshold: str = pinned("abbasi-yadkori")
    paper_literal: bool = pinned(False)
    index: str = pinned("paired")
    compute_jt: str = pinned("empirical")
    compute_bt: str = pinned("lucb")
    stopping: str = pinned("lucb")
    selection: str = param("greedy", Options(_RATIO), "arm-selection rule: greedy or the L1 ratio rule")


@register("m-lingape")
class MLinGapE(GIFA):
    """m-LinGapE ([RKD21]): top-m empirical J, LUCB-type b_t, tau^LUCB, paired indices.

    Defaults follow [RKD21]'s released code: V_0 = 1 * I, every arm pulled once first.
    selection: "greedy" (default), "optimized" (L1 ratio rule) or "largest-variance";
    threshold: "theoretical" (default, valid) or "heuristic" (the paper's experiments, no guarantee).
    """

    name = "m-lingape"
    index: str = param("paired", Options(("paired", "individual")), "gap indices")
    compute_jt: str = pinned("empirical")
    compute_bt: str = pinned("lucb")
    stopping: str = pinned("lucb")


@register("lingifa")
class LinGIFA(GIFA):
    """LinGIFA ([RKD21]): UGapE-type J and b_t, tau^UGapE, paired indices, no initialisation.

    lambda_reg: prior precision V_0 = lambda_reg I; default None = sigma / 20, the paper's lambda applied as
    V_0 = lambda I (our choice); [RKD21]'s released code uses (sigma/20)^2: pass it explicitly.
    stopping: "ugape" (default) or "lucb"; selection: "greedy" (default) or "largest-variance";
    index: "paired" (default) or "individual".  Cost O(K^2) per round (full Gram matrix).
    """

    name = "lingifa"
    #: None (the default): sigma / 20, the penalty the attribute then holds
    lambda_reg: float = like(LAMBDA_REG, default=None, none=True, help="ridge penalty (None: sigma / 20)")
    index: str = param("paired", Options(("paired", "individual")), "gap indices")
    compute_jt: str = pinned("ugape")
    compute_bt: str = pinned("gifa")
    stopping: str = like(GIFA.__parameters__["stopping"], default="ugape")
    init: str | bool = like(GIFA.__parameters__["init"], default=False)

    def _setup(self, features, p) -> None:
        if p.lambda_reg is None:
            p = replace(p, lambda_reg=p.sigma / 20.0)
        super()._setup(features, p)


class _ClassicalGIFA(GIFA):
    """GIFA on unstructured arms: empirical means and individual widths; every arm pulled once first."""

    models_features = False

    threshold: str = param(
        "lucb1", Options(CLASSICAL_THRESHOLDS), "confidence threshold ('heuristic' has no guarantee)",
        no_guarantee=("heuristic",),
    )
    selection: str = param("largest-variance", Options(("largest-variance", "both")), "which of b_t, c_t to pull")
    index: str = pinned("classical")
    compute_jt: str = pinned("empirical")
    compute_bt: str = pinned("lucb")
    stopping: str = pinned("lucb")
    init: str | bool = pinned(True)
    S: float = pinned(1.0)
    L: float | None = pinned(None)
    lambda_reg: float = pinned(1.0)
    paper_literal: bool = pinned(False)
    delta_eff: str = pinned("pairs")
    refresh_every: int = pinned(2000)


@register("lucb")
class LUCB(_ClassicalGIFA):
    """LUCB as a GIFA instance ([RKD21] Table 1): classical empirical means and individual widths.

    threshold: "lucb1" (default), "heuristic" or "hoeffding" (rewards in [0, 1]);
    selection: "largest-variance" (the less-sampled of b_t, c_t; default) or "both" (LUCB1: ask()
    returns b_t and c_t together).  The features only fix K; every arm is pulled once first.
    """

    name = "lucb"


@register("ugape")
class UGapE(_ClassicalGIFA):
    """UGapE as a GIFA instance ([RKD21] Table 1): classical indices, UGapE-type J, tau^UGapE.

    threshold: "lucb1" (default), "heuristic", or "hoeffding" (widths sqrt(log(4Kt^3/delta)/(2T_k))
    for rewards in [0, 1]: the GapE baseline of [KW]); selection as for LUCB.
    """

    name = "ugape"
    compute_jt: str = pinned("ugape")
    stopping: str = pinned("ugape")
