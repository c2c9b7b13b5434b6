"""The local form of T*(theta): the pairs of an answer, the convex minimax design, its certified solver.

T(w) = c max_p ||y_p||^2_{A(w)^-1} / g_p^2 over the pairs p = (i, j) of an answer (``complexity``'s docstring
for the models; ../shared/spec/LOWER_BOUND.md).

**Solver.** min_w max_p rho_p(w), rho_p = ||y_p||^2_{A(w)^-1} / g_p^2 is a convex minimax design (an
XY-allocation with gaps). The optimum rests on few arms and few pairs, so it is solved by column and
constraint generation: a primal-dual interior-point method (exact gradients and Hessians, Cholesky
solves) on a working set of arms and pairs, then a check over all K arms and P pairs, vectorised
(O((K + P) d^2), no loop over arms, nothing quadratic in K), which adds the violators. The certificate: for any
weights q on the pairs, min_w max_p rho_p >= min_w sum_p q_p rho_p(w) >= 2 L - max_k s_k, where
L = sum_p q_p rho_p(w) and s_k = x_k' A^-1 B A^-1 x_k, B = sum_p q_p y_p y_p' / g_p^2 (convexity:
the linearisation at w, minimised over the simplex; grad_k sum_p q_p rho_p = -s_k and w's = L).
The solver stops when T(w) exceeds this lower bound by at most ``tol`` (relative), and reports
T(w) itself, so ``allocation_time(X, theta, c.allocation) == c.T_star``.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.special import expit
from threadpoolctl import threadpool_limits

from screenbai.bandits.numerics.checks import check_features
from screenbai.bandits.numerics.glm import dmu
from screenbai.bandits.numerics.linalg import project_if_deficient, spanning_arms

MODELS = ("linear", "logistic")
#: the largest instance the exact logistic infimum (a constrained minimisation per pair) accepts
EXACT_MAX_PAIRS = 200


def exact_pairs_affordable(K: int, m: int = 1) -> bool:
    """Whether the m (K - m) pairs of an answer of m among K arms are few enough for the exact logistic bound."""
    return m * (K - m) <= EXACT_MAX_PAIRS


@dataclass(frozen=True)
class Complexity:
    """The characteristic time of an instance and the allocation that attains it.

    T_star: T*(theta), the characteristic time (tests per unit of log(1/delta)); inf when the answer is
        not unique at epsilon = 0 (tied best arms).
    allocation: w*(theta), the optimal fraction of tests per arm (length K, on the simplex).
    answer: the correct answer the bound uses (the best or epsilon-good arm attaining the maximum over
        answers, or the top-m set), as sorted arm indices.
    model: "linear" or "logistic" (the local Fisher form, or the exact Bernoulli KL when ``exact``).
    lower: a certified lower bound on T*(theta) for this answer (the duality certificate; equals
        T_star up to ``tol``).
    n_iter: solver iterations (Frank-Wolfe steps, or cutting planes when exact).
    exact: whether the logistic bound used the exact Bernoulli KL instead of the local form.
    working: the pairs (i, j) (one row each) the local solver's duals weigh at ``allocation`` (the binding ones):
        with the arms the allocation weighs, the warm start of a nearby solve (``characteristic_time``'s ``w0``);
        None from the exact bound.
    """

    T_star: float
    allocation: np.ndarray
    answer: tuple[int, ...]
    model: str
    lower: float = math.nan
    n_iter: int = 0
    exact: bool = False
    working: np.ndarray | None = field(default=None, repr=False, compare=False)


# ---------------------------------------------------------------------------- input checks
def _check(X, theta, model: str, sigma: float, epsilon: float, m: int):
    X = check_features(X)
    K, d = X.shape
    theta = np.asarray(theta, dtype=float).reshape(-1)
    if theta.size != d:
        raise ValueError(f"theta has {theta.size} entries but the features have d = {d} columns; give one per column")
    if not np.isfinite(theta).all():
        raise ValueError(f"theta contains NaN/inf: {theta}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}; got {model!r}")
    if model == "logistic":
        eta = X @ theta
        slope = dmu(eta)
        flat = np.flatnonzero(slope == 0.0)
        # mu' underflows (|x'theta| above ~745); where the other arms no longer span the arms' space, the Fisher
        # information is singular (a linalg traceback) (rare: the ranks are computed only then)
        if flat.size and np.linalg.matrix_rank(X[slope > 0.0]) < np.linalg.matrix_rank(X):
            k = int(flat[np.argmax(np.abs(eta[flat]))])
            raise ValueError(
                f"theta gives arm {k} x'theta = {eta[k]:.4g} ({flat.size} arm(s) beyond about +-745): its hit rate "
                "is exactly 0 or 1 in floating point and carries no Fisher information; give a theta of smaller "
                "norm (|x'theta| of 30 already means a hit rate within 1e-13 of 0 or 1)"
            )
    if not (isinstance(sigma, (int, float, np.floating)) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma (the noise scale of the linear-Gaussian model) must be a number > 0; got {sigma}")
    if not (isinstance(epsilon, (int, float, np.floating)) and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon (the tolerance of the answer) must be a finite number >= 0; got {epsilon!r}")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= int(m) < K:
        raise ValueError(f"m (the number of arms to name) must be a whole number with 1 <= m < K = {K}; got {m!r}")
    return X, theta, int(m)


def _means(X: np.ndarray, theta: np.ndarray, model: str) -> np.ndarray:
    eta = X @ theta
    return eta if model == "linear" else expit(eta)


def _answers(mu: np.ndarray, epsilon: float, m: int, answer) -> list[tuple[int, ...]]:
    """The answers to maximise over: the given one, the top-m set (m > 1), or every epsilon-good arm
    (m = 1), best first."""
    K = mu.size
    if answer is not None:
        a = np.asarray(answer, dtype=np.int64).reshape(-1)
        if a.size != m or len(set(a.tolist())) != m or a.min() < 0 or a.max() >= K:
            raise ValueError(f"answer must be {m} distinct arm indices in 0..{K - 1}; got {answer!r}")
        return [tuple(sorted(a.tolist()))]
    order = np.argsort(-mu, kind="stable")
    if m > 1:
        return [tuple(sorted(order[:m].tolist()))]
    good = order[mu[order] >= mu[order[0]] - epsilon]
    return [(int(i),) for i in good]


#: per thread: the features of the solves in the open ``shared_features`` blocks, and their projections
_SHARED = threading.local()


@contextmanager
def shared_features(X: np.ndarray):
    """Within the block, every solve on this very array (the same object, unchanged: a forecast's point and draws)
    reuses one projection of it onto the span of the arms (an SVD of the K x d features, 0.65 s at K = 1.58 M,
    d = 21) instead of computing it again. Other arrays are projected as usual."""
    stack = _SHARED.__dict__.setdefault("stack", [])
    stack.append((X, _projected(X)))  # nested blocks on the same array: one projection
    try:
        yield
    finally:
        stack.pop()


def _projected(X: np.ndarray) -> np.ndarray:
    for shared, Xp in reversed(getattr(_SHARED, "stack", [])):
        if shared is X:
            return Xp
    return project_if_deficient(X)[0]


class _Model:
    """The arms in the solver's form, once per (X, theta): coordinates Xp in the span of the arms,
    the rows z_k of A(w) = sum_k w_k z_k z_k', the values the gaps are taken on (x_k'theta, or the means
    mu_k) and the scale c of T(w) = c max_p ||y_p||^2_{A(w)^-1} / g_p^2 (module docstring)."""

    def __init__(self, X: np.ndarray, theta: np.ndarray, model: str, sigma: float):
        self.Xp = _projected(X)
        eta = X @ theta
        if model == "linear":
            self.Z, self.value, self.slope = self.Xp, eta, None
            self.scale = 2.0 * sigma**2
        else:
            self.slope = dmu(eta)
            self.Z = self.Xp * np.sqrt(self.slope)[:, None]
            self.value = expit(eta)
            self.scale = 2.0

    def directions(self, ii: np.ndarray, jj: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """y_p and g_p of the pairs (i, j): x_i - x_j and theta'(x_i - x_j) + epsilon (linear), or
        mu'_i x_i - mu'_j x_j and mu_i - mu_j + epsilon (logistic, the constraint linearised at theta)."""
        if self.slope is None:
            Y = self.Xp[ii] - self.Xp[jj]
        else:
            Y = self.slope[ii, None] * self.Xp[ii] - self.slope[jj, None] * self.Xp[jj]
        return Y, self.value[ii] - self.value[jj] + epsilon

    def rivals(self, i: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """``directions`` of the pairs (i, j) for every other arm j in order, the same numbers by contiguous copies
        and in place (an answer of one arm: K - 1 pairs; fancy indexing of K rows twice cost 1 s at K = 1.58 M)."""
        D = np.delete(self.Xp, i, axis=0)
        if self.slope is None:
            np.subtract(self.Xp[i], D, out=D)
        else:
            D *= np.delete(self.slope, i)[:, None]
            np.subtract(self.slope[i] * self.Xp[i], D, out=D)
        return D, self.value[i] - np.delete(self.value, i) + epsilon


class _Pairs:
    """The pairs of one answer in the solver's form: T(w) = scale max_p ||y_p||^2_{A(w)^-1} / g_p^2."""

    def __init__(self, model: _Model, epsilon: float, answer: tuple[int, ...]):
        K = model.Z.shape[0]
        inside = np.zeros(K, dtype=bool)
        inside[list(answer)] = True
        I = np.asarray(answer, dtype=np.int64)
        J = np.flatnonzero(~inside)
        ii, jj = np.repeat(I, J.size), np.tile(J, I.size)
        Y, g = model.rivals(int(I[0]), epsilon) if I.size == 1 else model.directions(ii, jj, epsilon)
        self.Z, self.scale = model.Z, model.scale
        self.answer = answer
        self.feasible = bool(np.all(g > 0))  # the answer is correct for theta (else Alt holds theta: T = inf)
        # pairs with y = 0 and a positive gap cannot be overturned (identical arms, epsilon > 0): no constraint
        norm = np.einsum("ij,ij->i", Y, Y)
        keep = norm > 1e-24 * max(1.0, float(norm.max()) if norm.size else 1.0)
        if keep.all():  # as a rule: no copy of the K x d directions
            self.Y, self.g2, self.pairs = Y, g**2, np.column_stack([ii, jj])
        else:
            self.Y, self.g2 = Y[keep], (g[keep] ** 2)
            self.pairs = np.column_stack([ii[keep], jj[keep]])

    def raw(self, w: np.ndarray) -> np.ndarray:
        """||y_p||^2_{A(w)^-1} for every pair (+inf for a direction A(w) does not cover)."""
        S = np.flatnonzero(w)  # the arms w weighs (a campaign's tests so far: a few hundred of a million)
        A = _gram(self.Z, w) if S.size > w.size // 2 else (self.Z[S].T * w[S]) @ self.Z[S]
        try:
            c = cho_factor(A, lower=True)
            return _forms(self.Y, solve_triangular(np.tril(c[0]), np.eye(A.shape[0]), lower=True).T, squares=True)
        except np.linalg.LinAlgError:
            lam, U = np.linalg.eigh(A)
            ok = lam > 1e-12 * max(float(lam.max()), 1e-300)
            C = self.Y @ U
            out = (C[:, ok] ** 2) @ (1.0 / lam[ok])
            outside = np.einsum("ij,ij->i", C[:, ~ok], C[:, ~ok])
            out[outside > 1e-18 * np.einsum("ij,ij->i", self.Y, self.Y)] = np.inf
            return out

    def time(self, w: np.ndarray) -> float:
        if not self.feasible:
            return math.inf
        if not self.g2.size:
            return 0.0
        return self.scale * float(np.max(self.raw(w) / self.g2))


# ---------------------------------------------------------------------------- the minimax design
def _interior(Z: np.ndarray, Yt: np.ndarray, w: np.ndarray, tol: float, budget: int):
    """min_{w in simplex} max_p yt_p' A(w)^-1 yt_p on a few arms (rows of Z) and pairs (rows of Yt, the
    directions divided by their gaps), by an infeasible primal-dual interior-point method (Nocedal &
    Wright 2006, 19.1-19.3; Boyd & Vandenberghe 2004, 11.7) on

        minimise t  s.t.  rho_p(w) - t + s_p = 0 (dual q_p),  s >= 0,  w >= 0 (dual z),  sum_k w_k = 1,

    with the exact derivatives grad_w rho_p = -(Z v_p)^2 and hess_w rho_p = 2 ((Z v_p)(Z v_p)') o (Z A^-1 Z'),
    v_p = A^-1 yt_p. The slacks s let a step leave rho_p(w) <= t (rho is convex: a step along the
    linearisation overshoots), so steps are limited only by positivity (fraction to the boundary 0.99).
    Returns (w, t, q, iterations); q, the pairs' dual weights, sums to 1.
    """
    n, a = Z.shape[0], Yt.shape[0]
    m = n + a

    def evaluate(w):
        cf = cho_factor((Z.T * w) @ Z, lower=True)
        V = cho_solve(cf, Yt.T)
        return np.einsum("ij,ji->i", Yt, V), cf, V

    rho, cf, V = evaluate(w)
    t = float(rho.max()) * 1.1
    sl = t - rho
    q = np.full(a, 1.0 / a)
    z = float(q @ sl) / a / w
    nu = float(np.max(((Z @ V) ** 2) @ q))
    it = 0
    for it in range(1, budget + 1):
        U = Z @ V
        U2 = U * U
        r_w = -(U2 @ q) - z + nu
        r_t = 1.0 - float(q.sum())
        r_e = rho - t + sl
        r_pri = float(w.sum()) - 1.0
        gap = float(q @ sl + z @ w)
        scale = max(abs(t), 1e-300)
        if (
            gap <= tol * scale
            and float(np.max(np.abs(r_e))) <= tol * scale
            and float(np.max(np.abs(r_w))) <= 1e-6 * max(nu, 1e-300)
            and abs(r_t) <= 1e-9
        ):
            break
        mu = 0.1 * gap / m
        G = Z @ cho_solve(cf, Z.T)
        Ds = q / sl
        c_q = Ds * (mu / q - sl + r_e)
        H = np.zeros((n + 2, n + 2))
        H[:n, :n] = 2.0 * ((U * q) @ U.T) * G + (U2 * Ds) @ U2.T
        H[np.arange(n), np.arange(n)] += z / w
        H[:n, n] = H[n, :n] = U2 @ Ds
        H[n, n] = float(Ds.sum())
        H[:n, n + 1] = H[n + 1, :n] = 1.0
        rhs = np.concatenate([-r_w + U2 @ c_q + (mu / w - z), [float(c_q.sum()) - r_t, -r_pri]])
        Dg = np.concatenate([w, [max(scale, 1e-300), 1.0]])  # diagonal scaling: z_k / w_k becomes z_k w_k
        Hs = H * Dg[:, None] * Dg[None, :]
        try:
            sol = Dg * np.linalg.solve(Hs, Dg * rhs)
        except np.linalg.LinAlgError:
            sol = Dg * np.linalg.lstsq(Hs, Dg * rhs, rcond=None)[0]
        dw, dt, dnu = sol[:n], float(sol[n]), float(sol[n + 1])
        dq = -Ds * (U2.T @ dw + dt) + c_q
        ds = (mu / q - sl) - (sl / q) * dq
        dz = (mu / w - z) - (z / w) * dw
        step = 1.0
        for v, dv in ((w, dw), (sl, ds), (q, dq), (z, dz)):
            neg = dv < 0
            if neg.any():
                step = min(step, 0.99 * float(np.min(-v[neg] / dv[neg])))
        while True:
            try:
                rho1, cf1, V1 = evaluate(w + step * dw)
                break
            except np.linalg.LinAlgError:
                step *= 0.5
                if step < 1e-14:
                    return w, t, q / q.sum(), it
        w, t, sl, q, z, nu = w + step * dw, t + step * dt, sl + step * ds, q + step * dq, z + step * dz, nu + step * dnu
        rho, cf, V = rho1, cf1, V1
    return w, max(t, float(rho.max())), q / q.sum(), it


def _top(v: np.ndarray, k: int) -> np.ndarray:
    """The indices ``np.argsort(-v)[:k]`` as a set (``_minimax`` takes them as sets), in O(K) by a partition where
    the k-th largest value is not tied with the next one (the set is then the same whatever the order), else by that
    sort itself (which of the tied values it takes is the sort's). At K = 10^6 a sort per column-generation round
    over the arms and one over the pairs cost more than a tenth of the round."""
    neg = -np.asarray(v)
    if k >= neg.size:
        return np.argsort(neg)[:k]
    part = np.argpartition(neg, k)
    if neg[part[:k]].max() < neg[part[k]]:  # False with a NaN: then the sort decides
        return part[:k]
    return np.argsort(neg)[:k]


#: rows of a K x d matrix taken at a time by ``_forms`` and ``_gram`` (a few MB: the products stay in cache, and no
#: K x d temporary is made; at K = 1.58 M, d = 21 one such temporary is 266 MB)
_BLOCK = 1 << 14


def _forms(R: np.ndarray, M: np.ndarray, squares: bool = False) -> np.ndarray:
    """r_k' M r_k for every row r_k of R (``squares``: ||M' r_k||^2, M any d x d' matrix), by blocks of rows."""
    out = np.empty(R.shape[0])
    for start in range(0, R.shape[0], _BLOCK):
        block = R[start : start + _BLOCK]
        P = block @ M
        out[start : start + _BLOCK] = np.einsum("ij,ij->i", P, P if squares else block)
    return out


def _gram(Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A(w) = sum_k w_k z_k z_k' by blocks of rows (no K x d temporary)."""
    A = np.zeros((Z.shape[1], Z.shape[1]))
    for start in range(0, Z.shape[0], _BLOCK):
        block = Z[start : start + _BLOCK]
        A += (block.T * w[start : start + _BLOCK]) @ block
    return A


def _spans(rows: np.ndarray, d: int) -> bool:
    """Whether these rows span R^d with room to spare (smallest singular value above 1e-6 of the largest)."""
    if rows.shape[0] < d:
        return False
    sv = np.linalg.svd(rows, compute_uv=False)
    return bool(sv[0] > 0 and sv[-1] > 1e-6 * sv[0])


def _minimax(
    pairs: _Pairs, tol: float, max_iter: int, w0=None, start: np.ndarray | None = None, spend: bool = False
) -> tuple[np.ndarray, float, float, int, np.ndarray]:
    """min_w max_p rho_p(w), rho_p = ||y_p||^2_{A(w)^-1} / g_p^2, by column and constraint generation:
    the interior-point method on a few arms and pairs, then the certificate on all of them (module
    docstring), adding the arms (largest s_k) and pairs (largest rho_p) that violate it, until the
    relative gap is at most ``tol``. O((K + P) d^2) per round on the whole instance, vectorised; the
    restricted problems are small (tens to a few hundred arms and pairs).

    ``w0``: a warm start (an allocation: its leading arms join the first working set, and where they span the arms'
    space no pivoted QR of all K is made); ``start``: the rows of pairs that join it too, and then every arm w0 weighs
    above 1e-3 of its largest weight (a previous solve's: a forecast's draws start from its point's, which spares them
    about half the rounds that build the working set up, 2 d arms and pairs at a time).

    ``spend``: the directions y_p / g_p are computed in place of ``pairs.Y`` (the same numbers; ``pairs`` is
    spent: at K = 1.58 M one K x d copy, 266 MB, less at the solver's peak).

    Returns (w, F(w), certified lower bound on the minimum, interior-point iterations, the rows of the pairs the
    duals weigh above 1e-3 of the largest at w).
    """
    Z, Y, g2 = pairs.Z, pairs.Y, pairs.g2
    K, d = Z.shape
    Yt = np.divide(Y, np.sqrt(g2)[:, None], out=Y if spend else None)
    if spend:
        pairs.Y = None  # type: ignore[assignment]
    batch = max(2 * d, 8)

    def full(w):
        # A(w) from the arms w weighs (after the first round the working set: tens to hundreds of arms, not K),
        # rho_p = ||L^-1 yt_p||^2 by blocks (L the Cholesky factor of A); V = A^-1 yt_p only for the active pairs
        S = np.flatnonzero(w)
        cf = cho_factor(_gram(Z, w) if S.size > K // 2 else (Z[S].T * w[S]) @ Z[S], lower=True)
        L_inv = solve_triangular(np.tril(cf[0]), np.eye(d), lower=True)
        return _forms(Yt, L_inv.T, squares=True), cf

    def solved(cf, cols):
        return cho_solve(cf, Yt[cols].T)

    w_full = np.full(K, 1.0 / K) if w0 is None else 0.5 * np.asarray(w0, float) / np.sum(w0) + 0.5 / K
    rho, cf = full(w_full)
    # A(w) on the chosen arms is invertible: a warm start's leading arms where they span the arms' space (a solve
    # near w0's: a forecast's draws from its point), else a spanning set (a pivoted QR of the K x d Z: 3-5 s at
    # K = 1.58 M, d = 21)
    arms = set() if w0 is None else set(_top(np.asarray(w0, float), batch).tolist())
    if w0 is not None and start is not None:
        w0 = np.asarray(w0, float)
        arms |= set(np.flatnonzero(w0 > 1e-3 * w0.max()).tolist())  # the arms it weighs
    if not _spans(Z[sorted(arms)], d):
        arms |= set(spanning_arms(Z).tolist())
    act = set(_top(rho, batch).tolist())
    if start is not None:
        act |= set(np.asarray(start, dtype=np.int64).tolist())
    # the first arms: those the most constraining pairs need most (s_k at the starting design)
    Va = solved(cf, sorted(act))
    s = _forms(Z, Va @ Va.T)
    arms |= set(_top(s, batch).tolist())
    lower, best_F, best_w = -math.inf, math.inf, w_full
    binding = np.zeros(0, dtype=np.int64)
    inner_tol, steps = 0.25 * tol, 0
    while steps < max_iter and inner_tol > 1e-14:
        S = np.array(sorted(arms))
        A_ = np.array(sorted(act))
        ws = 0.8 * w_full[S] / w_full[S].sum() + 0.2 / S.size if w_full[S].sum() > 0 else np.full(S.size, 1 / S.size)
        w_arms, _, q, used = _interior(Z[S], Yt[A_], ws, inner_tol, max(max_iter - steps, 1))
        steps += used
        w_full = np.zeros(K)
        w_full[S] = w_arms
        rho, cf = full(w_full)
        F = float(rho.max())
        if F < best_F:
            best_F, best_w = F, w_full.copy()
            binding = A_[q > 1e-3 * q.max()]  # the pairs the best allocation's duals weigh
        Vq = solved(cf, A_) * np.sqrt(q)
        s = _forms(Z, Vq @ Vq.T)
        L = float(w_full @ s)
        lower = max(lower, 2.0 * L - float(s.max()))
        if best_F - lower <= tol * best_F:
            break
        new_pairs = [p for p in _top(rho, batch).tolist() if p not in act and rho[p] > L * (1 + 0.1 * tol)]
        new_arms = [k for k in _top(s, batch).tolist() if k not in arms and s[k] > L * (1 + 0.1 * tol)]
        act |= set(new_pairs)
        arms |= set(new_arms)
        if not new_pairs and not new_arms:
            inner_tol *= 0.25  # the restricted problem holds what matters: solve it more precisely
    return best_w, best_F, lower, steps, binding


# ---------------------------------------------------------------------------- public API
def _floors(mdl: _Model, arms: np.ndarray, epsilon: float, w: np.ndarray, n_rivals: int = 8) -> np.ndarray:
    """Lower bounds on T* of the answers {i} for the arms i (m = 1), from their pairs with the n_rivals
    best arms: for any v, ||y||^2_{A(w)^-1} >= (v'y)^2 / v'A(w)v >= (v'y)^2 / max_k (z_k'v)^2 on the whole
    simplex (Cauchy-Schwarz), taken at v = A(w)^-1 y for the given allocation w (the best answer's)."""
    rivals = np.argsort(-mdl.value, kind="stable")[: n_rivals + 1]
    cf = cho_factor((mdl.Z.T * w) @ mdl.Z + 1e-12 * np.eye(mdl.Z.shape[1]), lower=True)
    out = np.zeros(arms.size)
    for start in range(0, arms.size, 64):  # blocks: K x (64 n_rivals) numbers at a time
        block = arms[start : start + 64]
        ii = np.repeat(block, rivals.size)
        jj = np.tile(rivals, block.size)
        Y, g = mdl.directions(ii, jj, epsilon)
        V = cho_solve(cf, Y.T)
        num = np.einsum("ij,ji->i", Y, V) ** 2
        den = np.max((mdl.Z @ V) ** 2, axis=0) * g**2
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where((ii != jj) & (den > 0), mdl.scale * num / den, 0.0)
        out[start : start + 64] = bound.reshape(block.size, rivals.size).max(axis=1)
    return out


def _warm(w0, pairs: _Pairs) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``_minimax``'s (w0, start) from ``characteristic_time``'s w0: an allocation (no pairs), or a previous solve
    (a Complexity: its allocation, and the rows of ``pairs`` among its working pairs)."""
    if not isinstance(w0, Complexity):
        return w0, None
    K = pairs.Z.shape[0]
    if w0.allocation.size != K:  # a solve of another instance: no warm start
        return None, None
    if w0.working is None:
        return w0.allocation, None
    keys = pairs.pairs[:, 0] * K + pairs.pairs[:, 1]  # sorted: the answer's arms in order, the rivals in order
    want = w0.working[:, 0] * K + w0.working[:, 1]
    at = np.minimum(np.searchsorted(keys, want), max(keys.size - 1, 0))
    return w0.allocation, at[keys[at] == want] if keys.size else np.zeros(0, np.int64)


def local_characteristic_time(
    X: np.ndarray,
    theta: np.ndarray,
    mu: np.ndarray,
    *,
    model: str,
    sigma: float,
    epsilon: float,
    m: int,
    tol: float,
    max_iter: int,
    answer=None,
    w0=None,
) -> Complexity:
    """T* and w* in the local form (linear-Gaussian, or the logistic local Fisher form) for checked inputs
    (``complexity.characteristic_time`` checks them); ``mu`` the arms' means."""
    mdl = _Model(X, theta, model, sigma)
    answers = _answers(mu, epsilon, m, answer)
    best: Complexity | None = None
    floors = np.zeros(len(answers))
    for idx in range(len(answers)):
        if best is not None and idx == 1:
            # the other epsilon-good answers: solve only those whose lower bound beats the best answer's T*
            floors[1:] = _floors(mdl, np.array([a[0] for a in answers[1:]]), epsilon, best.allocation)
        if best is not None and floors[idx] >= best.T_star:
            continue
        a = answers[idx]
        pairs = _Pairs(mdl, epsilon, a)
        if not pairs.feasible:
            continue
        if not pairs.g2.size:
            w, F, low, it, rows = np.full(X.shape[0], 1.0 / X.shape[0]), 0.0, 0.0, 0, np.zeros(0, np.int64)
        else:
            with threadpool_limits(limits=1):  # small matrices: threads only add overhead (and oversubscribe)
                w, F, low, it, rows = _minimax(pairs, tol, max_iter, *_warm(w0, pairs), spend=True)
        T = pairs.scale * F
        if best is None or T < best.T_star:
            best = Complexity(T, w, a, model, lower=pairs.scale * max(low, 0.0), n_iter=it, working=pairs.pairs[rows])
    if best is None:  # no answer is correct at epsilon = 0: the best arms tie
        K = X.shape[0]
        return Complexity(math.inf, np.full(K, 1.0 / K), answers[0], model, math.inf)
    return best


@dataclass(frozen=True)
class _Directions:
    """Directions with unit gaps, in the form ``_minimax`` reads (Z, Y, g2)."""

    Z: np.ndarray
    Y: np.ndarray
    g2: np.ndarray


def xy_design(Z, Y, *, tol: float = 1e-3, max_iter: int = 2_000, w0=None) -> tuple[np.ndarray, float, float]:
    """The transductive XY-optimal design: min over the simplex of max_y ||y||^2_{A(w)^-1},
    A(w) = sum_k w_k z_k z_k' (Fiez et al. 2019, Algorithm 1's lambda_r and rho(Y(S_r)); Soare et al.
    2014's XY-allocation), by the same column and constraint generation as ``characteristic_time``
    (all gaps 1). Z: (K, d) rows of full column rank (``project_if_deficient``); Y: (P, d) directions in
    their span, none zero. Returns (w, max_y ||y||^2_{A(w)^-1}, a certified lower end of the minimum),
    the value within a factor 1 + tol of the minimum. O(P d^2) per round over all directions."""
    Z = np.ascontiguousarray(Z, dtype=float)
    Y = np.ascontiguousarray(Y, dtype=float)
    if Z.ndim != 2 or Y.ndim != 2 or Y.shape[1] != Z.shape[1] or not Y.shape[0]:
        raise ValueError(f"xy_design needs Z (K, d) and at least one direction Y (P, d); got {Z.shape} and {Y.shape}")
    with threadpool_limits(limits=1):
        w, F, low, _, _ = _minimax(_Directions(Z, Y, np.ones(Y.shape[0])), tol, max_iter, w0)  # type: ignore[arg-type]
    return w, F, max(low, 0.0)
