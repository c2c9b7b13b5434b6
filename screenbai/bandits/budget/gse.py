"""[AKG22] GSE: Generalized Successive Elimination for fixed-budget best-arm identification.

The budget B is split over s = ceil(log_eta K) stages of n = floor(B / s) pulls.  In each stage the
surviving arms are projected onto their span, an allocation of exactly n pulls is fixed
*before* any reward of the stage is seen (uniform, Frank-Wolfe G/D-optimal design + rounding,
Wynn, or greedy G-allocation), and ``ask()`` returns the whole stage as one batch (one plate per
stage).  The stage's data alone (as in the paper's independence argument) give an OLS (``gse-lin``) or penalised
logistic MLE
(``gse-log``) estimate, and the ceil(|A| / eta) arms with the largest estimated means survive
(ties at random).  The last survivor is recommended.

Registered names (every parameter can still be overridden):

* ``gse-lin`` / ``gse-log``: allocation "fw" (Frank-Wolfe, ``fw_mode="D-exact"`` with away
  steps: the paper's FWG can stall), our choice;
  note that the paper's unsuffixed "GSE-Lin" is the uniform allocation.
* aliases fixing the allocation: ``gse-lin-uniform``, ``gse-lin-fwg``, ``gse-lin-wynn``,
  ``gse-lin-greedy``, ``gse-log-uniform``, ``gse-log-fwg``, ``gse-log-wynn``, ``gse-log-greedy``.

Package choices (the paper leaves them open): leftover budget B - s n goes to the last stage by default
(``leftover="last"``, so the whole budget is spent; ``"unused"`` is the paper's description,
``"spread"`` gives one extra pull to each of the first stages); ``lambda_reg = 1`` ridge penalty
for the logistic MLE (keeps it finite under separation); no forced exploration; K = 1 returns arm 0 without pulling.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from screenbai.bandits.core.cache import LRUCache, digest
from screenbai.bandits.core.params import (
    BOOLEAN,
    LAMBDA_REG,
    NONNEGATIVE,
    POSITIVE,
    TEST_COUNT,
    Interval,
    Options,
    like,
    param,
    required,
    run_state,
)
from screenbai.bandits.core.policy import NO_ARMS, Policy
from screenbai.bandits.core.registry import register
from screenbai.bandits.numerics.design import (
    FW_MODES,
    ROUNDING_METHODS,
    frank_wolfe,
    greedy_g_allocation,
    round_design,
    spread_order,
    uniform_allocation,
    wynn,
)
from screenbai.bandits.numerics.glm import logistic_mle
from screenbai.bandits.numerics.linalg import project
from screenbai.bandits.numerics.ties import top_m

ALLOCATIONS = ("uniform", "fw", "wynn", "greedy")
LEFTOVER = ("last", "spread", "unused")

# Designs depend only on the projected features (never on rewards): share them across the
# replications of a study.  Keyed by a digest of Z and the solver settings.
_DESIGN_CACHE: LRUCache[tuple] = LRUCache(256)


def n_stages(K: int, eta: float) -> int:
    """s = ceil(log_eta K), computed without floating-point log error (base eta, as in the paper's theorems)."""
    s, reach = 0, 1.0
    while reach < K * (1.0 - 1e-12):
        reach *= eta
        s += 1
    return s


def stage_sizes(K: int, eta: float) -> list[int]:
    """|A_1| = K, |A_{t+1}| = ceil(|A_t| / eta), the last stage forced to keep 1 arm."""
    s = n_stages(K, eta)
    sizes = [int(K)]
    for t in range(s):
        nxt = 1 if t == s - 1 else int(np.ceil(sizes[-1] / eta - 1e-12))
        sizes.append(max(1, min(nxt, sizes[-1] - 1)))
    return sizes


def _solve_design(Z, allocation, fw_mode, n_fw, fw_tol, fw_init, fw_away):
    if allocation == "fw":
        return frank_wolfe(Z, mode=fw_mode, n_iter=n_fw, tol=fw_tol, init=fw_init, return_info=True,
                           away_steps=fw_away and fw_mode == "D-exact")
    return wynn(Z, n_iter=n_fw, tol=fw_tol, init=fw_init, return_info=True)


def _cached_design(Z: np.ndarray, *settings):
    return _DESIGN_CACHE.get((digest(Z), settings), lambda: _solve_design(Z, *settings))


class GSE(Policy):
    """GSE (fixed budget). Use the registered subclasses ``gse-lin`` / ``gse-log``.

    Parameters
    ----------
    budget : total number of pulls B (required); at least the number of stages.
    eta : elimination factor (> 1); ceil(|A| / eta) arms survive each stage.
    allocation : "uniform" | "fw" | "wynn" | "greedy" (the stage allocation).
    fw_mode : Frank-Wolfe mode for allocation "fw": "D-exact" (default), "G-linesearch", "D-gradient".
    n_fw, fw_tol, fw_init : Frank-Wolfe / Wynn iterations, early-stop tolerance, start.
    fw_away : D-exact with Todd-Yildirim away steps (default True, our choice: same optimum, reaches the
        tolerance in far fewer iterations and with a sparser support; False = plain Frank-Wolfe).
    rounding : "efficient" (Pukelsheim) or "multinomial" (randomised).
    lambda_reg : ridge penalty of the logistic MLE (gse-log only; must be > 0: the MLE may not exist otherwise).
    reuse_data : estimate from all data collected so far on the surviving arms (not in the paper).
    leftover : where the remainder B - s floor(B / s) goes: "last" (default), "spread" or "unused".
    cache_designs : share FW/Wynn designs of identical stages across runs (they never depend on rewards).
    """

    name = "gse"
    fixed_budget = True
    model = "lin"

    budget: int = required(TEST_COUNT, "total number of pulls")
    eta: float = param(
        2.0, Interval(1.0, None, open=("low",)), "elimination factor: each stage keeps ceil(|A| / eta) arms"
    )
    allocation: str = param("fw", Options(ALLOCATIONS), "how each stage's pulls are allocated")
    fw_mode: str = param("D-exact", Options(FW_MODES), "Frank-Wolfe variant")
    n_fw: int = param(1000, Interval(0, None, integer=True), "Frank-Wolfe iterations")
    fw_tol: float = param(1e-3, POSITIVE, "Frank-Wolfe tolerance on the G-criterion")
    fw_init: str = param("uniform", Options(("uniform", "kumar-yildirim")), "Frank-Wolfe starting design")
    fw_away: bool = param(True, BOOLEAN, "D-exact with away steps")
    rounding: str = param("efficient", Options(ROUNDING_METHODS), "design rounding")
    lambda_reg: float = like(
        LAMBDA_REG, constraint=NONNEGATIVE, help="ridge penalty of the logistic MLE (gse-log: > 0)"
    )
    reuse_data: bool = param(False, BOOLEAN, "estimate from all data on the survivors (not in the paper)")
    leftover: str = param("last", Options(LEFTOVER), "where the budget remainder goes")
    cache_designs: bool = param(True, BOOLEAN, "share designs of identical stages across runs")

    # the run's state
    active: np.ndarray = run_state()  # the surviving arms
    stage: int = run_state()
    _Z: np.ndarray | None = run_state()  # the stage's projected features and allocation
    _counts: np.ndarray | None = run_state()
    _stage_n: np.ndarray | None = run_state()  # outcomes recorded in this stage, per active arm
    _stage_s: np.ndarray | None = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        lambda_reg, leftover = p.lambda_reg, p.leftover
        if self.model == "log" and not lambda_reg > 0:
            raise ValueError(
                f"lambda_reg must be > 0 for gse-log (the stage MLE often does not exist without a penalty, "
                f"the MLE may not exist without it); got {lambda_reg}"
            )
        self.budget = p.budget
        self.eta = p.eta
        self.allocation = p.allocation
        self.fw_mode, self.n_fw, self.fw_tol, self.fw_init = p.fw_mode, p.n_fw, p.fw_tol, p.fw_init
        self.fw_away = p.fw_away
        self.rounding = p.rounding
        self.lambda_reg = lambda_reg
        self.reuse_data = p.reuse_data
        self.cache_designs = p.cache_designs

        self.sizes = stage_sizes(self.K, self.eta)
        self.n_stages = len(self.sizes) - 1
        s = self.n_stages
        self._check_budget()
        per_stage = self.budget // s if s else 0
        self.stage_budgets = [per_stage] * s
        rest = self.budget - per_stage * s
        if s and leftover == "last":
            self.stage_budgets[-1] += rest
        elif s and leftover == "spread":
            for t in range(rest):
                self.stage_budgets[t] += 1
        self.active = np.arange(self.K)
        self.stage = 0
        self._Z = self._counts = self._stage_n = self._stage_s = None
        self.diagnostics.update(
            stages=s, budget=self.budget, fw_iterations=0, max_design_ratio=0.0, pinv_stages=0,
            newton_iterations_max=0, not_converged_fits=0,
        )

    @staticmethod
    def smallest_budget(K: int, rank: int, *, eta: float = 2.0, allocation: str = "fw") -> tuple[int, str]:
        """The smallest budget with which stage 1 (the most arms and dimensions) tests what it
        estimates, and why: uniform allocation needs one test per arm, a design one test per
        dimension of the arms' span; with less, arms are eliminated on no data."""
        s = n_stages(K, eta)
        if allocation == "uniform":
            need, why = K, f"one test for each of its K = {K} arms (uniform allocation)"
        else:
            need, why = rank, f"one test per dimension of the arms' span (rank {rank}) for a {allocation} design"
        return s * need, f"each of its s = {s} stages gets floor(budget / s) tests, but stage 1 needs {why}"

    def _check_budget(self) -> None:
        rank = self.K if self.allocation == "uniform" else int(np.linalg.matrix_rank(self.X))
        smallest, why = self.smallest_budget(self.K, rank, eta=self.eta, allocation=self.allocation)
        if self.budget < smallest:
            raise ValueError(
                f"budget = {self.budget} is too small for {self.name} with K = {self.K} arms: {why}; "
                f"the smallest valid budget is {smallest}"
            )

    # ------------------------------------------------------------------ allocation
    def _allocate(self, Z: np.ndarray, n: int) -> np.ndarray:
        k, d = Z.shape
        if self.allocation == "uniform" or k == 1:
            return uniform_allocation(n, k, self.rng)
        if self.allocation == "greedy":
            return greedy_g_allocation(Z, n, rng=self.rng)
        settings = (self.allocation, self.fw_mode, self.n_fw, self.fw_tol, self.fw_init, self.fw_away)
        pi, info = _cached_design(Z, *settings) if self.cache_designs else _solve_design(Z, *settings)
        self.diagnostics["fw_iterations"] += info["n_iter"]
        self.diagnostics["max_design_ratio"] = max(self.diagnostics["max_design_ratio"], info["g"] / info["d"])
        return round_design(n, pi, method=self.rounding, rng=self.rng)

    # ------------------------------------------------------------------ protocol
    def _select(self):
        if self.stage >= self.n_stages or self.active.size == 1:
            return None
        if self.n_in_flight:  # the stage ends when all its outcomes are recorded
            return NO_ARMS
        n = self.stage_budgets[self.stage]
        self._Z, _ = project(self.X[self.active])
        self._counts = self._allocate(self._Z, n)
        self._stage_n = np.zeros(self.active.size, dtype=np.int64)
        self._stage_s = np.zeros(self.active.size)
        return self.active[spread_order(self._counts)]  # each plate follows the stage's design, not one compound

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        local = np.searchsorted(self.active, arms)  # the stage's arms, in any order and any part
        assert self._stage_n is not None and self._stage_s is not None and self._counts is not None
        self._stage_n += np.bincount(local, minlength=self.active.size)
        self._stage_s += np.bincount(local, weights=rewards, minlength=self.active.size)
        if (self._stage_n < self._counts).any():
            return
        Z, counts = self._Z, self._counts
        assert Z is not None and counts is not None, "tell() before the stage was allocated"
        if self.reuse_data:
            n_a, s_a = self.n[self.active].astype(float), self.sums[self.active]
        else:
            n_a = counts.astype(float)
            s_a = self._stage_s
        scores = self._estimate(Z, n_a, s_a)
        keep = top_m(scores, self.sizes[self.stage + 1], self.rng)
        self.active = self.active[np.sort(keep)]
        self.stage += 1

    def _estimate(self, Z: np.ndarray, n_a: np.ndarray, s_a: np.ndarray) -> np.ndarray:
        """Stage OLS (eq. 1; pseudo-inverse when the pulls do not span): z^T theta_hat."""
        V = (Z.T * n_a) @ Z
        b = Z.T @ s_a
        pulled = Z[n_a > 0]
        if pulled.shape[0] >= Z.shape[1] and np.linalg.matrix_rank(pulled) == Z.shape[1]:
            theta = cho_solve(cho_factor(V), b)
        else:
            theta = np.linalg.pinv(V) @ b
            self.diagnostics["pinv_stages"] += 1
        return Z @ theta

    def _recommend(self, rng):
        if self.active.size == 1:
            return self.active.copy()
        # interrupted (max_samples) or leftover: best empirical mean among the survivors
        means = np.where(self.n[self.active] > 0, self.sums[self.active] / np.maximum(self.n[self.active], 1), -np.inf)
        return self.active[top_m(means, 1, rng)]


_ALLOCATION_NAMES = {
    "fw": "Frank-Wolfe G-optimal design (the paper's FWG)",
    "uniform": "uniform allocation over the surviving arms",
    "wynn": "Wynn's G-optimal design algorithm",
    "greedy": "greedy G-allocation",
}


def _alias(model: str, allocation: str) -> str:
    """The description of a GSE name that fixes the allocation."""
    return f"GSE-{model} with the stage allocation fixed to {_ALLOCATION_NAMES[allocation]}."


@register("gse-lin")
@register("gse-lin-fwg", _alias("Lin", "fw"), allocation="fw")
@register("gse-lin-uniform", _alias("Lin", "uniform"), allocation="uniform")
@register("gse-lin-wynn", _alias("Lin", "wynn"), allocation="wynn")
@register("gse-lin-greedy", _alias("Lin", "greedy"), allocation="greedy")
class GSELin(GSE):
    """GSE-Lin: stage OLS on projected features; default allocation Frank-Wolfe (D-exact)."""

    name = "gse-lin"
    model = "lin"


@register("gse-log")
@register("gse-log-fwg", _alias("Log", "fw"), allocation="fw")
@register("gse-log-uniform", _alias("Log", "uniform"), allocation="uniform")
@register("gse-log-wynn", _alias("Log", "wynn"), allocation="wynn")
@register("gse-log-greedy", _alias("Log", "greedy"), allocation="greedy")
class GSELog(GSE):
    """GSE-Log: stage penalised logistic MLE (lambda_reg = 1), Bernoulli (0/1) rewards."""

    name = "gse-log"
    model = "log"
    binary_rewards = True

    def _estimate(self, Z: np.ndarray, n_a: np.ndarray, s_a: np.ndarray) -> np.ndarray:
        """Stage logistic MLE (eq. 4 + ridge); ranking by z^T theta equals ranking by h(z^T theta)."""
        fit = logistic_mle(Z, n_a, s_a, lambda_reg=self.lambda_reg)
        self.diagnostics["newton_iterations_max"] = max(self.diagnostics["newton_iterations_max"], int(fit.n_iter))
        self.diagnostics["not_converged_fits"] += int(not fit.converged)
        return Z @ fit.theta
