"""Optimal experimental design for linear models : G/D-optimal designs and rounding.

A *design* is a probability vector ``pi`` over the arms (rows of ``Z``); its normalised
information matrix is ``Lambda(pi) = sum_a pi_a z_a z_a^T``.  By Kiefer-Wolfowitz the G-optimal
design (min over pi of ``max_a z_a^T Lambda^{-1} z_a``) is also D-optimal and attains ``d'``.

* :func:`frank_wolfe` - Frank-Wolfe, modes ``"D-exact"`` (default; Fedorov-Wynn/Khachiyan exact
  step), ``"G-linesearch"`` (literal FWG of [AKG22] Alg. 2; can stall: its subgradient always picks the worst-covered
  arm) and
  ``"D-gradient"`` (gradient of -det V, numerical line search on det V).
* :func:`wynn` - the same vertex with the open-loop step ``1/(k+2)`` (Wynn 1970).
* :func:`greedy_g_allocation` - sequential greedy integer G-allocation ([SLM14]).
* :func:`round_design` - design -> integer allocation summing exactly to n (Pukelsheim's efficient rounding).
* :func:`spread_order` - integer allocation -> the tests in an order whose every prefix follows it
  (:func:`spread_order_ranked` also gives each test's rank within its arm).

Every function accepts features that do not span their ambient space: they are projected onto
their span first, which leaves every variance ``z^T Lambda^+ z`` unchanged.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from screenbai import ScreenbaiWarning
from screenbai.bandits.numerics.checks import as_generator
from screenbai.bandits.numerics.linalg import gram_pull, project_if_deficient, spanning_arms, weighted_sherman_morrison
from screenbai.bandits.numerics.ties import argmax_random, argmin_random

FW_MODES = ("D-exact", "G-linesearch", "D-gradient")
ROUNDING_METHODS = ("efficient", "multinomial")


class DesignStallWarning(ScreenbaiWarning, RuntimeWarning):
    """The literal FWG line search made no progress (the subgradient step on the nonsmooth max can stall)."""


# ---------------------------------------------------------------------------- helpers
def _as_full_rank(Z) -> np.ndarray:
    """Z as float array with full column rank (projected onto the span of its rows if needed)."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2 or Z.shape[0] < 1 or Z.shape[1] < 1:
        raise ValueError(f"Z must be a 2-D array (arms x dimensions) with at least one arm; got shape {Z.shape}")
    if not np.isfinite(Z).all():
        raise ValueError("Z contains NaN/inf; every arm needs finite features")
    return project_if_deficient(Z)[0]


def _check_pi(pi, K: int) -> np.ndarray:
    pi = np.asarray(pi, dtype=float).reshape(-1)
    if pi.size != K:
        raise ValueError(f"the design has {pi.size} weights but there are {K} arms")
    if not np.isfinite(pi).all() or pi.min() < 0 or pi.sum() <= 0:
        raise ValueError("design weights must be finite, nonnegative and not all zero")
    return pi / pi.sum()


def variances(Z, pi) -> np.ndarray:
    """``z_a^T Lambda(pi)^{-1} z_a`` for every arm (Cholesky + one triangular solve, never an explicit inverse).

    Returns +inf everywhere when Lambda(pi) is singular.
    """
    Z = np.asarray(Z, dtype=float)
    pi = _check_pi(pi, Z.shape[0])
    lam = (Z.T * pi) @ Z
    try:
        c, low = cho_factor(lam, lower=True)
    except np.linalg.LinAlgError:
        return np.full(Z.shape[0], np.inf)
    M = cho_solve((c, low), np.eye(Z.shape[1]))
    return np.einsum("ij,ij->i", Z @ M, Z)


def g_value(Z, pi) -> float:
    """G-criterion ``max_a z_a^T Lambda(pi)^{-1} z_a`` (Kiefer-Wolfowitz); its minimum is rank(Z).

    Computed in the span of the arms, so rank-deficient Z is fine; inf if pi does not span it.
    """
    Z = _as_full_rank(Z)
    return float(variances(Z, pi).max())


class _RankOneDesign:
    """Keeps M = Lambda(pi)^{-1} and a_k = z_k^T M z_k under pi <- (1-g) pi + g e_j.

    O(Kd + d^2) per step (Sherman-Morrison); rebuilt exactly by Cholesky every ``refresh`` steps.
    """

    def __init__(self, Z: np.ndarray, pi: np.ndarray, refresh: int = 50):
        self.Z, self.pi, self.refresh = Z, pi.copy(), refresh
        self.d = Z.shape[1]
        self.rebuild()

    def rebuild(self) -> None:
        lam = (self.Z.T * self.pi) @ self.Z
        c, low = cho_factor(lam, lower=True)  # raises LinAlgError if the design does not span
        self.M = cho_solve((c, low), np.eye(self.d))
        self.M = 0.5 * (self.M + self.M.T)
        # (Z M) * Z rather than a triangular solve with K right-hand sides: OpenBLAS trsm threads
        # badly on a loaded machine (10 ms instead of 50 us for 400 x 20)
        self.a = np.einsum("ij,ij->i", self.Z @ self.M, self.Z)
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(c))))
        self._since = 0

    def direction(self, j: int) -> tuple[np.ndarray, np.ndarray, float]:
        """u = M z_j, b = Z u (b_k = z_k^T M z_j), c = z_j^T M z_j."""
        u = self.M @ self.Z[j]
        return u, self.Z @ u, float(self.Z[j] @ u)

    def step(self, j: int, gamma: float, u=None, b=None, c=None, drop: bool = False) -> None:
        """pi <- (1 - gamma) pi + gamma e_j; gamma < 0 is an away step (drop: pi_j becomes 0)."""
        if gamma == 0.0:
            return
        if u is None:
            u, b, c = self.direction(j)
        s = gamma / (1.0 - gamma)
        M, factor = weighted_sherman_morrison(self.M, u, c, s)
        self.M = M / (1.0 - gamma)
        self.a = (self.a - factor * b * b) / (1.0 - gamma)
        self.logdet += self.d * np.log1p(-gamma) + np.log1p(s * c)
        self.pi *= 1.0 - gamma
        self.pi[j] += gamma
        self._since += 1
        if drop:  # exact: (1 - gamma) pi_j + gamma = 0 at the away-step bound
            self.pi[j] = 0.0
        if self._since >= self.refresh:
            self.rebuild()


def _initial_design(Z: np.ndarray, init: str) -> np.ndarray:
    K, d = Z.shape
    if init == "uniform":
        return np.full(K, 1.0 / K)
    if init == "kumar-yildirim":
        return kumar_yildirim_init(Z)
    raise ValueError(f"init must be 'uniform' or 'kumar-yildirim'; got {init!r}")


def kumar_yildirim_init(Z) -> np.ndarray:
    """Uniform weight on <= 2d' extreme arms (Kumar & Yildirim 2005; [AKG22] App. C).

    For each of d' directions orthogonal to the span chosen so far (the residual of the arm
    farthest from that span), take the arms with the largest and the smallest projection.
    """
    Z = np.asarray(Z, dtype=float)
    K, d = Z.shape
    chosen: list[int] = []
    basis = np.zeros((d, 0))
    for _ in range(d):
        R = Z - (Z @ basis) @ basis.T
        norms = np.einsum("ij,ij->i", R, R)
        far = int(np.argmax(norms))
        if norms[far] <= 1e-20 * max(1.0, float(np.max(np.einsum("ij,ij->i", Z, Z)))):
            break
        direction = R[far] / np.sqrt(norms[far])
        proj = Z @ direction
        for k in (int(np.argmax(proj)), int(np.argmin(proj))):
            if k not in chosen:
                chosen.append(k)
        basis = np.column_stack([basis, direction])
    pi = np.zeros(K)
    pi[chosen] = 1.0 / len(chosen)
    return pi


# ---------------------------------------------------------------------------- Frank-Wolfe and Wynn
def _vertex_method(Z, init: str, n_iter: int, tol: float, step) -> tuple[np.ndarray, dict]:
    """The loop shared by Frank-Wolfe and Wynn: while max_k a_k > (1 + tol) d', call
    ``step(state, k, kmax, a_max)`` (iteration k, most uncertain arm kmax); a step returning False
    reports a stall and ends the loop.  Returns the design and (n_iter, g, stalled, d)."""
    if int(n_iter) < 0:
        raise ValueError(f"n_iter must be a nonnegative integer; got {n_iter}")
    if not tol >= 0:
        raise ValueError(f"tol must be nonnegative; got {tol}")
    Z = _as_full_rank(Z)
    K, d = Z.shape
    if d == 1:  # the design concentrates on the arm of largest |z| (value 1); a D-step would be 1
        pi = np.zeros(K)
        pi[int(np.argmax(np.abs(Z[:, 0])))] = 1.0
        return pi, {"n_iter": 0, "stalled": False, "d": d, "g": 1.0}
    state = _RankOneDesign(Z, _initial_design(Z, init))
    target = (1.0 + tol) * d
    it, stalled = int(n_iter), False
    for k in range(int(n_iter)):
        kmax = int(np.argmax(state.a))
        a_max = float(state.a[kmax])
        if a_max <= target:
            it = k
            break
        if step(state, k, kmax, a_max) is False:
            it, stalled = k, True
            break
    state.rebuild()
    pi = np.clip(state.pi, 0.0, None)
    pi /= pi.sum()
    return pi, {"n_iter": it, "stalled": stalled, "d": d, "g": float(state.a.max())}


def _d_exact_step(away_steps: bool):
    """Vertex argmax_k a_k with the exact D-optimal step (a_j/d' - 1)/(a_j - 1); with
    ``away_steps``, Todd-Yildirim: remove mass from the best-covered support arm if that helps more."""

    def step(state: _RankOneDesign, k: int, kmax: int, a_max: float) -> None:
        d = state.d
        if away_steps:
            supp = np.flatnonzero(state.pi > 0)
            kmin = int(supp[np.argmin(state.a[supp])])
            a_min = float(state.a[kmin])
            if d - a_min > a_max - d:
                pj = float(state.pi[kmin])
                floor = -pj / (1.0 - pj)
                gamma = (a_min / d - 1.0) / max(a_min - 1.0, 1e-12) if a_min > 1.0 + 1e-12 else floor
                state.step(kmin, max(gamma, floor), drop=gamma <= floor)
                return
        gamma = (a_max / d - 1.0) / max(a_max - 1.0, 1e-12)
        state.step(kmax, min(max(gamma, 0.0), 1.0 - 1e-12))

    return step


def _d_gradient_step(state: _RankOneDesign, k: int, kmax: int, a_max: float) -> None:
    """Vertex from the gradient of -log det, step by a numerical line search on log det."""
    from scipy.optimize import minimize_scalar  # here: importing scipy.optimize costs 0.1 s at every start

    d = state.d
    u, b, c = state.direction(kmax)
    # -log det((1-g) Lam + g z z^T) = -d log(1-g) - log(1 + s c) + const, s = g/(1-g)
    res = minimize_scalar(
        lambda g: -d * np.log1p(-g) - np.log1p(g / (1.0 - g) * c),
        bounds=(0.0, 1.0 - 1e-9),
        method="bounded",
        options={"xatol": 1e-10},
    )
    state.step(kmax, float(res.x), u, b, c)


def _g_linesearch_step():
    """Literal [AKG22] Alg. 2: Danskin subgradient vertex and a bounded line search on the
    nonsmooth G-objective; warns and reports a stall after 5 consecutive zero steps."""
    from scipy.optimize import minimize_scalar  # here: importing scipy.optimize costs 0.1 s at every start

    zero_steps = 0

    def step(state: _RankOneDesign, k: int, kmax: int, a_max: float) -> bool:
        nonlocal zero_steps
        _, b_max, _ = state.direction(kmax)
        j = int(np.argmax(b_max * b_max))  # argmin of the Danskin gradient -(A[:, kmax])^2
        u, b, c = state.direction(j)
        a = state.a

        def phi(g):
            s = g / (1.0 - g)
            return float(np.max(a - s * b * b / (1.0 + s * c))) / (1.0 - g)

        res = minimize_scalar(phi, bounds=(0.0, 1.0 - 1e-9), method="bounded", options={"xatol": 1e-12})
        gamma = float(res.x) if phi(float(res.x)) < phi(0.0) else 0.0
        zero_steps = zero_steps + 1 if gamma < 1e-12 else 0
        if zero_steps >= 5:
            warnings.warn(
                f"Frank-Wolfe (G-linesearch) stalled at max variance {a_max:.4g} > d' = {state.d} after "
                f"{k + 1} iterations: the line search on the nonsmooth G-criterion makes no progress "
                "(its subgradient step on the nonsmooth max can stall); use mode='D-exact'",
                DesignStallWarning,
                stacklevel=4,
            )
            return False
        state.step(j, gamma, u, b, c)
        return True

    return step


def frank_wolfe(
    Z,
    mode: str = "D-exact",
    n_iter: int = 1000,
    tol: float = 1e-3,
    init: str = "uniform",
    return_info: bool = False,
    away_steps: bool = False,
):
    """G/D-optimal design by Frank-Wolfe on the simplex ([AKG22] Alg. 2 and the standard D-optimal variants).

    Parameters
    ----------
    Z : (K, d) arm features (projected onto their span internally if rank-deficient).
    mode : "D-exact" (vertex argmax_k a_k, exact D-step (a_j/d' - 1)/(a_j - 1); converges to
        the Kiefer-Wolfowitz optimum), "G-linesearch" (literal [AKG22] Alg. 2: Danskin
        subgradient + bounded line search on the nonsmooth G-objective; warns and stops when it
        stalls, i.e. gamma < 1e-12 for 5 consecutive iterations) or "D-gradient" (vertex from the
        gradient of -det V, step by numerical line search on det V).
    n_iter : maximum number of iterations N.
    tol : stop once max_k a_k <= (1 + tol) d'.
    init : "uniform" (Alg. 2) or "kumar-yildirim".
    return_info : also return a dict (n_iter, g, stalled, d).
    away_steps : D-exact only: Todd-Yildirim (Wolfe-Atwood) away steps, which remove mass from
        the support arm of smallest variance when that gap is larger; same optimum, linear
        convergence (not in the paper; off by default).

    Returns
    -------
    pi : (K,) design (nonnegative, sums to 1), [info].
    """
    if mode not in FW_MODES:
        raise ValueError(f"fw mode must be one of {FW_MODES}; got {mode!r}")
    if mode == "D-exact":
        step = _d_exact_step(away_steps)
    elif mode == "D-gradient":
        step = _d_gradient_step
    else:
        step = _g_linesearch_step()
    pi, info = _vertex_method(Z, init, n_iter, tol, step)
    return (pi, info) if return_info else pi


def wynn(Z, n_iter: int = 1000, tol: float = 1e-3, init: str = "uniform", return_info: bool = False):
    """Wynn's (1970) method: vertex argmax_i z_i^T Lambda^{-1} z_i, step 1/(k+2)."""

    def step(state: _RankOneDesign, k: int, kmax: int, a_max: float) -> None:
        state.step(kmax, 1.0 / (k + 2.0))

    pi, info = _vertex_method(Z, init, n_iter, tol, step)
    return (pi, info) if return_info else pi


# ---------------------------------------------------------------------------- greedy G-allocation
def greedy_g_allocation(Z, n: int, rng=None) -> np.ndarray:
    """Integer G-allocation built one pull at a time ([SLM14] G-allocation).

    Start: one planned pull of each arm of a maximal linearly independent subset (pivoted QR
    on Z^T); if n < d', start from A = 1e-8 I instead.  Then each pull goes to
    argmin_k max_k' [G_k'k' - G_k'k^2 / (1 + G_kk)] with G = Z A^{-1} Z^T updated by rank one
    (O(K^2) per pull).  Returns the (K,) pull counts, summing to n.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n (number of pulls) must be nonnegative; got {n}")
    rng = as_generator(rng)
    Z = _as_full_rank(Z)
    K, d = Z.shape
    counts = np.zeros(K, dtype=np.int64)
    if n == 0:
        return counts
    if n >= d:
        start = spanning_arms(Z, pivot_order=True)
        counts[start] = 1
        A = Z[start].T @ Z[start]
    else:
        A = 1e-8 * np.eye(d)
    ZM = Z @ cho_solve(cho_factor(A, lower=True), np.eye(d))
    G = ZM @ Z.T
    for _ in range(n - int(counts.sum())):
        diag = np.diag(G).copy()
        scores = np.max(diag[:, None] - G * G / (1.0 + diag)[None, :], axis=0)
        k = argmin_random(scores, rng)
        gram_pull(G, k, K)
        counts[k] += 1
    return counts


# ---------------------------------------------------------------------------- uniform allocation
def uniform_allocation(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """floor(n / k) pulls per arm, one more for n mod k distinct arms drawn at random; sums to n."""
    q, r = divmod(int(n), int(k))
    counts = np.full(k, q, dtype=np.int64)
    counts[rng.choice(k, size=r, replace=False)] += 1
    return counts


# ---------------------------------------------------------------------------- rounding
#: weights below this are pruned by ``round_design`` (their arms get no test from the rounding)
ROUND_PRUNE = 1e-4


def kept_by_rounding(pi: np.ndarray, prune: float = ROUND_PRUNE, tol: float = 1e-9) -> np.ndarray:
    """The arms ``round_design`` keeps of the weights ``pi`` (a mask): weights above ``prune``, or, when none is (a
    very flat design over many arms), every weight above ``tol``."""
    keep = pi > max(tol, prune)
    return keep if keep.any() else pi > tol


def round_design(n: int, pi, method: str = "efficient", rng=None, prune: float = ROUND_PRUNE,
                 tol: float = 1e-9) -> np.ndarray:
    """ROUND(n, pi): integer pull counts with sum exactly n (Pukelsheim 2006, ch. 12).

    "efficient": Pukelsheim-Rieder efficient apportionment after pruning weights below ``prune``
    (renormalised); if n is smaller than the support, the n heaviest arms get one pull each
    (ties at random).  "multinomial": n i.i.d. draws from pi (unbiased, noisier).
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n (number of pulls) must be nonnegative; got {n}")
    if method not in ROUNDING_METHODS:
        raise ValueError(f"rounding method must be one of {ROUNDING_METHODS}; got {method!r}")
    pi = np.asarray(pi, dtype=float).reshape(-1)
    pi = _check_pi(pi, pi.size)
    rng = as_generator(rng)
    K = pi.size
    counts = np.zeros(K, dtype=np.int64)
    if n == 0:
        return counts
    if method == "multinomial":
        return rng.multinomial(n, pi).astype(np.int64)
    supp = np.flatnonzero(kept_by_rounding(pi, prune, tol))
    w = pi[supp] / pi[supp].sum()
    p = supp.size
    if n < p:
        jitter = rng.random(p)  # random order among equal weights
        heaviest = np.lexsort((jitter, -w))[:n]
        counts[supp[heaviest]] = 1
        return counts
    m = np.ceil((n - p / 2.0) * w).astype(np.int64)
    m = np.maximum(m, 0)
    while m.sum() < n:
        m[argmin_random(m / w, rng)] += 1
    while m.sum() > n:
        m[argmax_random((m - 1) / w, rng)] -= 1
    counts[supp] = m
    return counts


def spread_order(counts) -> np.ndarray:
    """The arms of the integer allocation ``counts`` (arm k ``counts[k]`` times) in the order that puts arm k's j-th
    test at (j + 1/2) / counts[k] of the way through, ties by arm: every prefix of t tests holds arm k within
    1/2 + s counts[k] / (2 N) tests of its share t counts[k] / N (N = sum(counts), s the arms with a test), so the
    plates of a phase follow its design. Fixed by the counts alone (no outcome, no random draw). The phases of RAGE
    and RAGE-GLM (which predicts a phase's outcomes in this order too), the blocks of lin-tas and log-tas and the
    uniform baseline's batch are handed out in it. ``np.repeat(np.arange(K), counts)``, arm after arm, put a phase's
    first plates all on its lowest-numbered arm."""
    return spread_order_ranked(counts)[0]


def spread_order_ranked(counts) -> tuple[np.ndarray, np.ndarray]:
    """``spread_order(counts)`` and, for each of its tests, j: its rank among its arm's tests (arm k's j-th test,
    j = 0 .. counts[k] - 1, in order). RAGE-GLM needs j to find each outcome it predicts at its place in the phase."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    arm = np.repeat(np.arange(counts.size), counts)
    j = np.arange(arm.size) - np.repeat(np.cumsum(counts) - counts, counts)
    seq = np.lexsort((arm, (j + 0.5) / counts[arm]))
    return arm[seq], j[seq]
