"""Linear-algebra kernels shared by the algorithms: projection onto the span of the arms, spanning
sets, and rank-one (Sherman-Morrison) updates.

Per-round loops never invert a matrix: they update an inverse, or a Gram matrix Z A^{-1} Z^T,
by rank one after each pull and rebuild it exactly from the counts now and then.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import get_lapack_funcs
from scipy.linalg.lapack import dpotrf, dpotrs

RANK_RTOL = 1e-10  # singular values below this fraction of the largest count as zero
#: eigenvalues below this fraction of the largest count as zero (``pinv_psd``)
PSD_RTOL = 1e-9


def project(X: np.ndarray, rtol: float = RANK_RTOL) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of the arms in an orthonormal basis of their span.

    Returns (Z, Q) with Z = X @ Q, Q a d x d' matrix with orthonormal columns, d' = rank(X).
    Predictions are preserved: z^T theta' = x^T (Q theta').
    """
    U, s, _ = np.linalg.svd(X.T, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        raise ValueError("all arm features are zero; the arms carry no information")
    r = int(np.sum(s > rtol * s[0]))
    Q = U[:, :r]
    return X @ Q, Q


def project_if_deficient(X: np.ndarray, rtol: float = RANK_RTOL) -> tuple[np.ndarray, np.ndarray | None]:
    """(X, None) when X has full column rank, else ``project(X)``: a design matrix built from
    rank-deficient features would never become invertible."""
    s = np.linalg.svd(X, compute_uv=False)
    if s.size == 0 or s[0] == 0:
        raise ValueError("all arm features are zero; the arms carry no information")
    if X.shape[1] > X.shape[0] or np.sum(s > rtol * s[0]) < X.shape[1]:
        return project(X, rtol)
    return X, None


def spanning_arms(Z: np.ndarray, pivot_order: bool = False) -> np.ndarray:
    """Indices of a maximal linearly independent subset of the arms (pivoted QR on Z^T), sorted,
    or in pivot order (most independent first) with ``pivot_order``; Z must have full column rank."""
    piv = _qr_pivots(Z.T)
    start = piv[: Z.shape[1]].astype(np.int64)
    return start if pivot_order else np.sort(start)


def _qr_pivots(A: np.ndarray) -> np.ndarray:
    """The column pivots of the pivoted QR of A (0-based): LAPACK's geqp3 with the work size it asks for, as
    ``scipy.linalg.qr(A, pivoting=True)`` calls it (the same pivots), on one copy of A.  scipy's ``qr`` holds two
    copies at once (that of its work-size query and that of the call) and then builds R (upper-triangular, the
    size of A): at K = 1.58 M, d = 21 its peak was 1.24 GB (three 266 MB copies and the 431 MB work array), which
    was the peak of a campaign's ``next``; here 0.70 GB."""
    a = np.array(A, dtype=float, order="F")  # geqp3 overwrites it
    (geqp3,) = get_lapack_funcs(("geqp3",), (a,))
    lwork = int(geqp3(a, lwork=-1, overwrite_a=True)[-2][0].real)  # the query reads only the shape
    _, jpvt, _, _, info = geqp3(a, lwork=lwork, overwrite_a=True)
    if info < 0:
        raise ValueError(f"illegal value in {-info}th argument of internal geqp3")
    return jpvt - 1


def shared_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of X equal to another row: (their indices, a group number for each: equal rows share one).

    Rows are hashed first (pandas: 0.1 s at K = 10^6, where ``np.unique(axis=0)`` over all rows takes
    4 s); only the repeated ones are sorted into groups.
    """
    import pandas as pd

    rows = np.flatnonzero(pd.DataFrame(X).duplicated(keep=False).to_numpy())
    if not rows.size:
        return rows, rows
    _, group = np.unique(X[rows], axis=0, return_inverse=True)
    return rows, group.reshape(-1)


#: largest ||x||^2 / lambda of a ridge design kept by rank one: the update (P^{-1} + x x^T)^{-1} computes
#: P's shrunken direction as a difference of numbers about this many times larger, so it keeps about
#: 16 - log10(ratio) digits. Runs went wrong from about 10^13 on (stopping after 10 tests and erring 8 to 95 %
#: of the time at 10^16); 10^10 keeps six digits.
RIDGE_SCALE_MAX = 1e10
#: smallest max ||x||^2 / lambda of a ridge design: below, a test of any arm adds less than 10^-6 of the penalty
#: to the design, so the penalty outweighs the 10^6 tests of the default cap (DEFAULT_MAX_SAMPLES) and the widths
#: stay where the prior put them: at 1e-12 (features ~1e-6, lambda = 1) LinGapE ran to its cap without a word
RIDGE_SCALE_MIN = 1e-6


def check_ridge_scale(X: np.ndarray, lambda_reg: float) -> None:
    """Refuse arm features too large for the ridge penalty: ``max ||x||^2 / lambda_reg`` above
    ``RIDGE_SCALE_MAX`` leaves the rank-one updates of the design's inverse without precision; below
    ``RIDGE_SCALE_MIN`` the penalty outweighs a million tests of any arm (nothing is learnt)."""
    if not lambda_reg > 0:
        return
    norm2 = float(np.max(np.einsum("ij,ij->i", X, X)))
    if norm2 == 0.0:
        raise ValueError("all arm features are zero; the arms carry no information")
    ratio = norm2 / lambda_reg
    if RIDGE_SCALE_MIN <= ratio <= RIDGE_SCALE_MAX:
        return
    small = ratio < RIDGE_SCALE_MIN
    bound = RIDGE_SCALE_MIN if small else RIDGE_SCALE_MAX
    factor = 10.0 ** math.ceil(0.5 * abs(math.log10(ratio / bound)))
    why = (
        f"is below {RIDGE_SCALE_MIN:g}: the penalty outweighs {1.0 / ratio:.3g} tests of any arm and the confidence "
        "widths stay at the prior's (runs go on to their cap)"
        if small
        else f"is above {RIDGE_SCALE_MAX:g}, where the rank-one updates of the design's inverse lose their precision "
        "(runs stop too early and err)"
    )
    raise ValueError(
        f"the arms' features reach norm {math.sqrt(norm2):.3g} with ridge penalty lambda_reg = {lambda_reg:g}: "
        f"||x||^2 / lambda_reg = {ratio:.3g} {why}. {'Multiply' if small else 'Divide'} the features by a common "
        f"factor (e.g. {factor:g}, or standardize the columns{'; a bound S on ||theta|| then shrinks by it' * small}), "
        f"or {'lower' if small else 'raise'} lambda_reg to at {'most' if small else 'least'} {norm2 / bound:.3g}"
    )


def sherman_morrison(P: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float]:
    """P <- (P^{-1} + x x^T)^{-1} in place, in O(d^2).

    Returns u = P x and q = x^T P x (both before the update), from which callers update
    quantities derived from P: e.g. z^T P z decreases by (z^T u)^2 / (1 + q).
    """
    u = P @ x
    q = float(x @ u)
    P -= np.multiply.outer(u, u / (1.0 + q))
    return u, q


def weighted_sherman_morrison(M: np.ndarray, u: np.ndarray, c: float, s: float) -> tuple[np.ndarray, float]:
    """(M^{-1} + s z z^T)^{-1} from u = M z and c = z^T M z, for a weight s of either sign (a negative
    weight removes mass, e.g. a Frank-Wolfe away step).  Returns the new matrix and s / (1 + s c),
    the factor by which quantities z_k^T M z_j lose (z_k^T u)(u^T z_j)."""
    factor = s / max(1.0 + s * c, 1e-300)
    return M - np.outer(u, factor * u), factor


def gram_pull(M: np.ndarray, k: int, K: int) -> np.ndarray:
    """Rank-one update of the rows of a Gram matrix after one more pull of arm k.

    M stacks G = Z A^{-1} Z^T (its first K rows) and optionally rows Y A^{-1} Z^T for directions y.
    After A <- A + z_k z_k^T, every row r becomes M_r - M_rk G_k / (1 + G_kk), in place.
    Returns the column M[:, k] before the update.
    """
    col = M[:, k].copy()
    M -= np.multiply.outer(col, col[:K] / (1.0 + col[k]))
    return col


#: largest K for which an algorithm may keep a K x K matrix (2 GiB of float64)
MAX_K_QUADRATIC = 16_384


def refuse_quadratic(algorithm: str, K: int, what: str, instead: str) -> None:
    """Refuse a K whose K x K matrix would not fit, naming the matrix and the algorithm to use instead."""
    if K > MAX_K_QUADRATIC:
        raise ValueError(
            f"{algorithm} keeps {what}, a K x K matrix: K = {K:,} arms would need {8 * K * K / 2**30:,.0f} GiB "
            f"and O(K^2) work per round (it accepts K <= {MAX_K_QUADRATIC:,}). Use {instead} instead"
        )


def cholesky_lower(A: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of ``cholesky_solve``: ``scipy.linalg.cho_factor(A, lower=True)[0]``, the same
    LAPACK call (potrf) and the same numbers, without scipy's per-call checks and wrappers, which cost several
    times the factorisation of the d x d matrices of the per-outcome likelihood-ratio tests (d of 2 to 10:
    a quarter of log-tas's run time on the workflow's small test). Raises LinAlgError when A is not positive definite or
    not finite."""
    c, info = dpotrf(A, lower=1, clean=0)
    if info != 0 or not np.isfinite(c).all():
        raise np.linalg.LinAlgError(f"not positive definite (potrf info {info})")
    return c


def cholesky_solve(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A^-1 b from A's factor ``cholesky_lower(A)``: ``scipy.linalg.cho_solve((c, True), b)``'s LAPACK call
    (potrs) without its checks."""
    x, info = dpotrs(c, b, lower=1)
    if info != 0:
        raise ValueError(f"potrs: illegal argument {-info}")
    return x


def pinv_psd(A: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(A^+, a basis of A's null space or None when A is invertible) for a symmetric PSD matrix (eigh)."""
    lam, U = np.linalg.eigh(0.5 * (A + A.T))
    top = float(lam[-1]) if lam.size else 0.0
    keep = lam > PSD_RTOL * max(top, 0.0) if top > 0 else np.zeros(lam.size, dtype=bool)
    P = (U[:, keep] / lam[keep]) @ U[:, keep].T
    null = U[:, ~keep] if (~keep).any() else None
    return P, null
