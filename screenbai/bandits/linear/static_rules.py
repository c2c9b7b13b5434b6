"""[SLM14]'s confidence widths and stopping rule (eq. 11), each written once.

* ``log_term``: log_n(K^2/delta) of Prop. 1 (or log_n(K/delta) with ``confidence="arms"``);
* ``pair_width2``: ||x_i - x_j||^2_{A^{-1}} = G_ii + G_jj - 2 G_ij from the Gram matrix G = Z A^{-1} Z^T;
* ``eq11_width``: Prop. 1's width c ||x - x'||_{A^{-1}} sqrt(log_n(K^2/delta));
* ``eq11_holds``: eq. 11 for the empirical best arm, for one data state or a batch of them;
* ``beaten``: the elimination of [SLM14] eq. 16 (arms beaten by another by more than their width), by
  blocks of rows so that no K x K comparison is held whole;
* ``OLSRule``: Prop. 1's confidence set as a stopping rule (core/parts.py), the certificate of eq. 11;
* ``OLSTracker``: least squares kept by rank one, with eq. 11 in O(K d + d^2) per test (round by round);
* ``eq11_batch`` / ``first_eq11_stop``: eq. 11 for every data state of a block of pulls at once (the
  vectorised ``run`` of the static allocations), in chunks whose arrays stay under ``FAST_PATH_MAX_BYTES``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from screenbai.bandits.certainty.certificate import certified_from_bounds
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.numerics.estimators import RidgeState

REFRESH = 10_000  # exact rebuild of the greedy state / OLS inverse every this many pulls (bounds round-off drift)
CONFIDENCES = ("pairs", "arms")

#: the most memory (bytes) the vectorised tests hold at once: eq. 11 over a block of pulls, tested in chunks
#: of ``states_per_chunk`` data states (at K = 16 384, d = 20: 31 states of 4.2 MB each and the products
#: z_k z_k^T, 183 MB in all, instead of one (4096, d, K) array of 10.7 GB and a K x K identity of 2.1 GB),
#: and the elimination ``beaten``, by blocks of rows
FAST_PATH_MAX_BYTES = 256 * 2**20
#: (states, K) float64 arrays the chunked test may hold beside W (states, d, K): cumulative counts and sums,
#: mu, diag, the Gram row of the best arm, width^2, gap, gap^2, two for the left-hand side, and bool masks
#: (three temporaries while W is built); counted with a margin, checked by tests/test_static_memory.py
_ROWS_PER_STATE = 12


def log_term(n, K: int, delta: float, confidence: str = "pairs"):
    """log_n(K^2/delta) = log(6 n^2 K^2 / (pi^2 delta)) ([SLM14] Prop. 1: a union bound over the K^2 pairs
    and all n); with ``confidence="arms"``, log_n(K/delta) = log(6 n^2 K / (pi^2 delta)) (a union over the K
    arms, which reproduces [XHS18] Table 1's oracle)."""
    n = np.asarray(n, dtype=float)
    if confidence == "pairs":
        return np.log(6.0 * n * n * K * K / (np.pi**2 * delta))
    if confidence == "arms":
        return np.log(6.0 * n * n * K / (np.pi**2 * delta))
    raise ValueError(f"confidence must be one of {CONFIDENCES}; got {confidence!r}")


def pair_width2(diag_i, diag, rows) -> np.ndarray:
    """||x_i - x_j||^2_{A^{-1}} = G_ii + G_jj - 2 G_ij for every arm j (clipped at 0 against round-off).

    diag_i: G_ii for the arms i (shape (...)); diag: diag(G) (shape (K,) or (..., K)); rows: G_i (shape
    (..., K)). Returns shape (..., K).
    """
    width2 = np.asarray(diag_i)[..., None] + diag
    width2 -= 2.0 * rows
    return np.maximum(width2, 0.0, out=width2)


def eq11_width(width2, n, c: float, K: int, delta: float, confidence: str = "pairs"):
    """[SLM14] Prop. 1's width c ||y||_{A^-1} sqrt(log_n(K^2/delta)) from width2 = ||y||^2_{A^-1} (n: one count)."""
    return c * np.sqrt(width2 * float(log_term(n, K, delta, confidence)))


def eq11_holds(mu, width2, best, n, c: float, K: int, delta: float, confidence: str = "pairs"):
    """[SLM14] eq. 11 for x = ``best`` (the empirical best): every other arm x' has mu_x - mu_x' >= 0 and
    c^2 ||x - x'||^2_{A^{-1}} log_n(K^2/delta) <= (mu_x - mu_x')^2, i.e. is beaten by at least its width.

    mu, width2 (= ``pair_width2`` of ``best``): shape (..., K); best, n: shape (...) (one data state or a
    batch). Returns a bool of shape (...).
    """
    idx = np.asarray(best)[..., None]
    gap = np.take_along_axis(mu, idx, axis=-1) - mu
    lhs = c * c * width2 * log_term(n, K, delta, confidence)[..., None]
    ok = (gap >= 0) & (lhs <= gap * gap)
    np.put_along_axis(ok, idx, True, axis=-1)
    return ok.all(axis=-1)


def beaten(mu, widths) -> np.ndarray:
    """Arms x beaten by some x': mu_x' - mu_x > width(x, x') ([SLM14] eq. 16; strict).

    ``widths(rows)``: the widths of the arms ``rows`` against every arm, shape (len(rows), K). The rows are
    taken in blocks of at most a quarter of ``FAST_PATH_MAX_BYTES`` per (rows, K) array (width^2, width,
    difference of means, comparison), so that the K x K comparison never exists whole.
    """
    K = mu.size
    out = np.empty(K, dtype=bool)
    step = max(1, FAST_PATH_MAX_BYTES // (4 * 8 * K))
    for s in range(0, K, step):
        rows = np.arange(s, min(s + step, K))
        out[rows] = np.any(mu[None, :] - mu[rows, None] > widths(rows), axis=1)
    return out


class OLSTracker(RidgeState):
    """Ordinary least squares kept by rank one (``RidgeState`` with lambda0 = 0) plus eq. 11."""

    def __init__(self, Z):
        super().__init__(Z, lambda0=0.0, refresh_every=REFRESH)
        self.Z = Z

    add = RidgeState.update

    def eq11(self, n: int, c: float, K: int, delta: float, confidence: str = "pairs"):
        """(ok, best, mu_hat) for the stopping rule eq. 11, O(Kd + d^2)."""
        mu = self.Z @ (self.P @ self.b)
        i = int(mu.argmax())
        row = self.Z @ (self.P @ self.Z[i])
        width2 = pair_width2(self.diag[i], self.diag, row)
        return bool(eq11_holds(mu, width2, i, n, c, K, delta, confidence)), i, mu


def ols_mu(Z, counts, sums):
    """mu_hat = Z theta_hat from per-arm aggregates and the Cholesky factor of A, or (None, None) while A is
    singular."""
    A = (Z.T * counts) @ Z
    try:
        c = cho_factor(A)
    except np.linalg.LinAlgError:
        return None, None
    theta = cho_solve(c, Z.T @ sums)
    return Z @ theta, c


# ---------------------------------------------------------------------- vectorised over data states
def states_per_chunk(K: int, d: int, max_bytes: int | None = None) -> int:
    """How many data states the vectorised eq. 11 test holds at once: half of ``max_bytes`` (default
    ``FAST_PATH_MAX_BYTES``) for the states' arrays, (d + 12) K + 2 d^2 + 2 d float64s each, the other half
    for the products z_k z_k^T (see ``_gram_batch``). At least one state."""
    max_bytes = FAST_PATH_MAX_BYTES if max_bytes is None else max_bytes
    per_state = 8 * (K * (d + _ROWS_PER_STATE) + 2 * d * d + 2 * d)
    return max(1, (max_bytes // 2) // per_state)


def fast_path_bytes(K: int, d: int, max_bytes: int | None = None) -> int:
    """The bytes of the arrays the chunked eq. 11 test holds at once (the bound ``states_per_chunk`` keeps)."""
    max_bytes = FAST_PATH_MAX_BYTES if max_bytes is None else max_bytes
    B = states_per_chunk(K, d, max_bytes)
    cols = min(d * d, max(1, (max_bytes // 2) // (8 * K)))
    return 8 * (B * (K * (d + _ROWS_PER_STATE) + 2 * d * d + 2 * d) + K * cols)


def _gram_batch(counts, Z, max_bytes: int | None = None):
    """A_b = Z^T diag(counts_b) Z for every row b of counts, shape (B, d, d): counts @ (z_k z_k^T flattened),
    with the products z_k z_k^T made for at most half of ``max_bytes`` of the d^2 entries at a time."""
    max_bytes = FAST_PATH_MAX_BYTES if max_bytes is None else max_bytes
    K, d = Z.shape
    cols = min(d * d, max(1, (max_bytes // 2) // (8 * K)))
    A = np.empty((counts.shape[0], d * d))
    for s in range(0, d * d, cols):
        e = min(s + cols, d * d)
        entries = np.arange(s, e)
        A[:, s:e] = counts @ (Z[:, entries // d] * Z[:, entries % d])
    return A.reshape(-1, d, d)


def _batch_forward(counts, Z):
    """W_b = L_b^{-1} Z^T for A_b = Z^T diag(counts_b) Z = L_b L_b^T, all b at once.

    Cholesky and forward substitution vectorised over the batch (loops over d only), so that
    G_b = W_b^T W_b = Z A_b^{-1} Z^T. Returns W with shape (B, d, K).
    """
    B = counts.shape[0]
    K, d = Z.shape
    A = _gram_batch(counts, Z)
    L = np.zeros_like(A)
    for j in range(d):
        Lj = L[:, j, :j]
        diag = A[:, j, j] - np.einsum("bk,bk->b", Lj, Lj)
        if np.any(diag <= 0):
            raise np.linalg.LinAlgError("design matrix is singular in the stopping-rule block")
        L[:, j, j] = np.sqrt(diag)
        if j + 1 < d:
            L[:, j + 1 :, j] = (A[:, j + 1 :, j] - np.einsum("bik,bk->bi", L[:, j + 1 :, :j], Lj)) / L[:, j, j][:, None]
    W = np.empty((B, d, K))
    for r in range(d):
        acc = np.broadcast_to(Z[:, r], (B, K)).copy()
        if r:
            acc -= np.einsum("bk,bkm->bm", L[:, r, :r], W[:, :r, :])
        W[:, r, :] = acc / L[:, r, r][:, None]
    return W


def eq11_batch(Z, counts, sums, n, c: float, K: int, delta: float, confidence: str = "pairs"):
    """Vectorised eq. 11 for B data states at once.

    counts, sums: (B, K) cumulative per-arm counts and reward sums; n: (B,) sample counts.
    Returns (ok (B,) bool, best (B,) int): ok[b] is True when x = Pi(theta_hat) beats every other arm
    by at least its eq. 11 width. Uses mu_hat = G sums and G = W^T W with W = L^{-1} Z^T.
    """
    B = counts.shape[0]
    W = _batch_forward(counts, Z)
    v = np.einsum("bdk,bk->bd", W, sums)
    mu = np.einsum("bdk,bd->bk", W, v)
    best = mu.argmax(axis=1)
    rows = np.arange(B)
    diag = np.einsum("bdk,bdk->bk", W, W)
    grow = np.einsum("bd,bdk->bk", W[rows, :, best], W)
    width2 = pair_width2(diag[rows, best], diag, grow)
    return eq11_holds(mu, width2, best, n, c, K, delta, confidence), best


def _cumulative(counts, sums, arms, rewards):
    """(B, K) per-arm counts and reward sums after each of the pulls ``arms``, starting from counts, sums
    (each sum accumulated in the order of the pulls)."""
    B, K = arms.size, counts.size
    rows = np.arange(B)
    cum_n = np.zeros((B, K))
    cum_n[rows, arms] = 1.0
    cum_n[0] += counts
    np.cumsum(cum_n, axis=0, out=cum_n)
    cum_s = np.zeros((B, K))
    cum_s[rows, arms] = rewards
    cum_s[0] += sums
    np.cumsum(cum_s, axis=0, out=cum_s)
    return cum_n, cum_s


def first_eq11_stop(Z, counts, sums, arms, rewards, n_before: int, lo: int, hi: int,
                    c: float, K: int, delta: float, confidence: str = "pairs"):
    """The first data state of a block of pulls at which eq. 11 holds.

    counts, sums: (K,) per-arm totals before the block, updated in place to the totals after it; arms,
    rewards: the block's pulls. The state after pull b holds n = n_before + b + 1 observations and is tested
    when lo <= n < hi. Returns (n, best, counts_n, sums_n) at the first state where eq. 11 holds, else None.
    The states are tested in chunks of ``states_per_chunk`` (memory under ``FAST_PATH_MAX_BYTES``), in order.
    """
    step = states_per_chunk(*Z.shape)
    for a in range(0, arms.size, step):
        b = min(a + step, arms.size)
        ns = n_before + np.arange(a + 1, b + 1)
        tested = np.flatnonzero((ns >= lo) & (ns < hi))
        if not tested.size:
            np.add.at(counts, arms[a:b], 1)
            np.add.at(sums, arms[a:b], rewards[a:b])
            continue
        cum_n, cum_s = _cumulative(counts, sums, arms[a:b], rewards[a:b])
        t0, t1 = int(tested[0]), int(tested[-1]) + 1  # a contiguous range of states
        ok, best = eq11_batch(Z, cum_n[t0:t1], cum_s[t0:t1], ns[t0:t1], c, K, delta, confidence)
        if ok.any():
            first = int(np.argmax(ok))
            return int(ns[t0 + first]), int(best[first]), cum_n[t0 + first], cum_s[t0 + first]
        counts[:], sums[:] = cum_n[-1], cum_s[-1]
    return None


class OLSRule(StoppingRule):
    """[SLM14] Prop. 1's confidence set on the OLS estimate of a design fixed before its outcomes, as a
    stopping rule (core/parts.py): the set eq. 11 tests. The policy names the outcomes it rests on with
    ``policy._design_outcomes()`` (per-arm counts, sums, number of observations: all outcomes for the static
    allocations, the current phase's for xy-adaptive); ``rule_args`` = (c, K, delta, confidence) of the widths.
    The policies test eq. 11 themselves, round by round or in bulk (``OLSTracker.eq11``,
    ``first_eq11_stop``), on the same set."""

    name = "[SLM14] Prop. 1"

    def __init__(self, Z: np.ndarray, rule_args: tuple, epsilon: float = 0.0):
        super().__init__(epsilon, rule_args[2])
        self.Z, self.rule_args = Z, rule_args

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """eq. (1) of certainty/certificate.py with the set on the OLS estimate from the design's counts and
        sums (n observations): |(x - x')^T (theta_hat - theta*)| <= c ||x - x'||_{A^-1} sqrt(log_n(K^2/delta))
        for all pairs and all n at once, c = 2 sqrt(2) sigma: the widths of the eq. 11 stopping rule. inf
        while the tested arms do not span. O(K d^2)."""
        A = np.asarray(answer)
        counts, sums, n = self.policy._design_outcomes()
        mu, chol = ols_mu(self.Z, np.asarray(counts, dtype=float), np.asarray(sums, dtype=float))
        if mu is None or n < 1:
            return np.full(A.size, np.inf)
        W = cho_solve(chol, self.Z.T)  # A^-1 Z^T
        diag = np.einsum("kd,dk->k", self.Z, W)
        width2 = pair_width2(diag[A], diag, self.Z[A] @ W)  # rows of Z A^-1 Z^T for the answer
        U = mu[None, :] - mu[A][:, None] + eq11_width(width2, n, *self.rule_args)
        U[np.arange(A.size), A] = -np.inf
        return certified_from_bounds(U, 1)
