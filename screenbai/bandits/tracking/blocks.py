"""Per-direction evidence from blocks of tests with fixed designs: an anytime-valid test for each
direction x_i - x_j that carries no d log t term.

Setting (linear model, outcomes r = x'theta + noise, the noise sigma-sub-Gaussian given the past).
The tests come in blocks b = 1, 2, ...; block b's design (how many tests of each arm) is fixed
before any of its outcomes is seen. Its least-squares estimate theta_b = A_b^+ s_b (A_b =
sum_s x_s x_s', s_b = sum_s x_s r_s over the block's tests only) gives, for a direction y in the
range of A_b, y'theta_b - y'theta = y'A_b^+ sum_s x_s noise_s, a weighted sum of the block's noises
with fixed weights: it is sub-Gaussian with variance proxy v_b(y) = sigma^2 y'A_b^+ y given
everything before the block (the fixed-design argument of RAGE, Fiez et al. 2019, Sec. 3).

The e-process of a direction y. Write e_b = y'theta_b - y'theta, v_b = v_b(y) and, from a start
block tau on, M_n(c) = sum_{tau <= b <= n} (y'theta_b - c) / v_b and V_n = sum_{tau <= b <= n} 1 / v_b
(blocks whose design does not have y in its range are skipped). For each lam >= 0,
exp(lam M_n(y'theta) - lam^2 V_n / 2) is a non-negative supermartingale over blocks (the factor of
block b has conditional mean at most 1 by the sub-Gaussian bound at s = lam / v_b). Mixing lam over
a half-normal prior of precision rho (the N(0, 1/rho) density doubled on lam >= 0) gives

    E_n(c) = 2 sqrt(rho / (V_n + rho)) exp(M_n(c)^2 / (2 (V_n + rho))) Phi(M_n(c) / sqrt(V_n + rho))

(Robbins' normal mixture, one-sided; Abbasi-Yadkori et al. 2011, Thm 1, with d = 1; Howard et al.
2021, Prop. 6), still a supermartingale with E = 1 before tau. A direction whose start block tau is
designed to settle it alone (its information 1/v_tau at least the expected need, below) mixes in a
point mass: E_n = q exp(lam* M_n - lam*^2 V_n / 2) + (1 - q) E^mix_n, q = POINT_SHARE, with
lam* = sqrt(2 (log(1/delta') + log(1/q)) v_tau) (a convex combination of two supermartingales
that start at 1 is one). At block tau alone the point part crosses 1/delta' when
M >= sqrt(2 (log(1/delta') + log(1/q)) V_tau), the Chernoff bound of one sub-Gaussian look, where the
mixture needs about 2 (1 + u)(log(1/delta') + (1/2) log(1 + 1/u)) V_tau: a block that is to end
the run needs about a fifth less information in its binding directions (q = 0 elsewhere: long runs
keep the mixture alone). The start tau, rho, q and lam* may depend on everything before block tau
(and on block tau's design, fixed before its outcomes): conditionally on that past the process
starts at 1. So by Ville's inequality, with probability >= 1 - delta', E_n(y'theta) < 1/delta' at
every block at once. E_n(c) decreases in c, so this is a one-sided confidence sequence:
y'theta > LCB_n(y) = (S_n - M*_n) / V_n for all n, with S_n = sum y'theta_b / v_b and M*_n the root
of log E = log(1/delta') in M (``mixture_boundary``; with a point part, the smaller of the two
components' roots at levels log(1/delta') + log(1/q) and log(1/delta') - log(1 - q), a root at
which E already exceeds 1/delta', so the bound stays valid and is at most slightly wider). The
boundary is M*^2 ~ 2 (V + rho) (log(1/delta') + (1/2) log((V + rho)/rho) - log 2 Phi): no d log t term.

Tuning (any choice is valid; these make it cheap): a direction's test starts at the first block b
whose earlier pooled estimate puts its margin y'theta_hat + epsilon at least one standard deviation
above zero, or whose own design alone brings a tenth of the information the test is expected to
need, 2 (log(1/delta') + 3/2) / margin^2 (margin floored at its standard deviation); rho is 0.3
times that expected need, near the optimum of the mixture's price (1 + u)(log(1/delta') +
(1/2) log(1 + 1/u)) with u = rho / V at the stop (the stop usually comes after more than the
expected need: 0.3 rather than 0.2 cut the median tests 5 % on Soare's and Reda's instances).
Starting later wastes the blocks before; starting with rho far from the need pays
(1/2) log(V / rho) (or the factor 1 + u).

Combining directions. A wrong answer needs one of finitely many FIXED directions to fail: for best-
arm identification with answer i and the true best arm i*, "i is not epsilon-good" means
(x_i - x_i*)'theta < -epsilon while the stop certified LCB(x_i - x_i*) > -epsilon; there are K - 1
such directions (i* is unknown but fixed), so delta' = delta / (K - 1). For top-m (an arm i of the
answer is wrong when mu_i < mu_(m) - epsilon): some true top-m arm j lies outside the answer and
(x_i - x_j)'theta < -epsilon, one of the m (K - m) directions from a non-top-m arm to a top-m arm:
delta' = delta / (m (K - m)). The same event gives the anytime certificate: on it,
mu_j - mu_i <= -LCB(x_i - x_j) for every direction of the union, so the answer's arm i is
epsilon_i-good with epsilon_i = max(0, max_{j outside the answer} -LCB(x_i - x_j)).

Statistics are kept per closed block (A_b, s_b and the pooled estimate before it), a few d x d matrices:
the evidence in the directions from a leader i to every arm is summed on demand in O(B K d) and
then kept up to date in O(K d) per block while i stays a leader (a cache, never part of the state).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.numerics.linalg import pinv_psd
from screenbai.bandits.numerics.ties import top_m

#: a direction is in the range of a block's design when its part outside is below this fraction of its norm
_RANGE_RTOL = 1e-7
#: a direction's test starts at the first block whose earlier estimate of its margin has this z-score
START_Z = 1.0
#: ... or at the first block that alone brings this share of the information the test is expected to need
START_SHARE = 0.1
#: the union bound's weights come from the first block when more rivals than this (else uniform)
WEIGHTS_MIN_RIVALS = 8
#: ... a share WEIGHTS_UNIFORM of them uniform, the rest the first block's plausibility (0.5 -> 0.1:
#: mean tests -2 % on random_linear seed 0, -4 % on seed 1, 100 runs each, benchmarks/tracking_ratios.py)
WEIGHTS_UNIFORM = 0.1
#: ... the plausibility exp(-z^2 / (2 T)) at this temperature T (1 -> 0.25: on random_linear(K=400, d=20)
#: seeds 0 / 1 / 2, 59 % of 400 runs stop after the first designed block against 52 %, median 113.5 against
#: 119.5 and 560 against 597 tests over 300 runs; 0.1 and 0.35 alike within the noise)
WEIGHTS_TEMPERATURE = 0.25
#: the mixture's precision rho: this fraction of the information the test is expected to need
RHO_FRACTION = 0.3
#: weight q of the point mass lam* in the e-process of a direction whose start block alone brings
#: POINT_MIN_SHARE times the information it is expected to need. On random_linear(K=400, d=20) seed 0
#: (200 runs, with lin-tas's full first designed block) 54 % of the runs stop after that block, 42 %
#: with the mixture alone, so the median falls from 101.5 to 80 tests; q = 0.8 and 0.97 alike, 0.5
#: 51 %. Its cost where runs are long: seed 2, median 560 -> 620 tests (docs/lower_bound.md, "Measured")
POINT_SHARE = 0.9
#: ... (0.5 instead of 1: Soare's instance needed 7 % more tests, its binding direction then often got the
#: point part at a margin estimated too large)
POINT_MIN_SHARE = 1.0


def mixture_log_evalue(M: np.ndarray, V: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """log of the half-normal mixture int_0^inf exp(lam M - lam^2 V / 2) pi_rho(lam) dlam, pi_rho the
    N(0, 1/rho) density doubled on lam >= 0:  log 2 + (1/2) log(rho / (V + rho)) + M^2 / (2 (V + rho))
    + log Phi(M / sqrt(V + rho))  (0 where V = 0)."""
    s2 = V + rho
    with np.errstate(divide="ignore", invalid="ignore"):
        out = math.log(2.0) + 0.5 * np.log(rho / s2) + M * M / (2.0 * s2) + log_ndtr(M / np.sqrt(s2))
    return np.where(V > 0, out, 0.0)


def mixture_boundary(V: np.ndarray, rho: np.ndarray, log_level: float) -> np.ndarray:
    """The M at which ``mixture_log_evalue(M, V, rho)`` reaches log_level (increasing in M):
    z = M / sqrt(V + rho) solves z^2 / 2 + log(2 Phi(z)) = log_level + (1/2) log((V + rho) / rho)
    (Newton from the Gaussian tail's root; the left side is convex and increasing for z >= 0)."""
    V = np.asarray(V, dtype=float)
    rho = np.broadcast_to(np.asarray(rho, dtype=float), V.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = log_level + 0.5 * np.log((V + rho) / rho)
        z = np.sqrt(2.0 * np.maximum(c, 0.0))
        for _ in range(50):
            logphi = log_ndtr(z)
            h = 0.5 * z * z + math.log(2.0) + logphi - c
            dh = z + np.exp(-0.5 * z * z - logphi) / math.sqrt(2.0 * math.pi)
            step = h / dh
            z = z - step
            if np.all(np.abs(step[np.isfinite(step)]) < 1e-12):
                break
        return z * np.sqrt(V + rho)


def point_log_evalue(M: np.ndarray, V: np.ndarray, rho: np.ndarray, lam: np.ndarray, q: np.ndarray) -> np.ndarray:
    """log of q exp(lam M - lam^2 V / 2) + (1 - q) E^mix(M, V, rho): a point mass q at lam mixed with the half-normal
    mixture (V > 0)."""
    return np.logaddexp(np.log(q) + lam * M - 0.5 * lam**2 * V, np.log1p(-q) + mixture_log_evalue(M, V, rho))


def point_boundary(V: np.ndarray, rho: np.ndarray, lam: np.ndarray, q: np.ndarray, log_level: float) -> np.ndarray:
    """The M at which ``point_log_evalue`` reaches log_level (increasing in M; V > 0), by bisection: each part alone
    reaches it with its weight at or above the root (the bound this replaces: at the stop it could read
    epsilon = 0.0013 where the stopping rule had certified 0), and neither reaches it unweighted below the root.
    The upper end is returned, so an e-value above log_level at M means M is above it."""
    hi = np.minimum(mixture_boundary(V, rho, log_level - np.log1p(-q)), (log_level - np.log(q)) / lam + 0.5 * lam * V)
    lo = np.minimum(mixture_boundary(V, rho, log_level), log_level / lam + 0.5 * lam * V)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        up = point_log_evalue(mid, V, rho, lam, q) >= log_level
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
        if np.all(hi - lo <= 1e-12 * np.maximum(np.abs(hi), 1.0)):
            break
    return hi


class _BlockCache:
    """Per closed block, the leader-independent vectors: X theta_b, diag(X A_b^+ X'), X N_b (N_b a
    basis of A_b's null space, when A_b is singular), and the same for the pooled design of the blocks
    before it (X prior_b and diag(X Pbar_b X'), Pbar_b its pseudo-inverse; None for the first block)."""

    __slots__ = ("P", "pred", "diag", "XN", "Pbar", "prior_pred", "prior_diag")

    def __init__(self, X: np.ndarray, A: np.ndarray, s: np.ndarray, prior: np.ndarray, Abar: np.ndarray | None):
        self.P, null = pinv_psd(A)
        self.pred = X @ (self.P @ s)
        self.diag = np.einsum("ij,ij->i", X @ self.P, X)
        self.XN = None if null is None else X @ null
        if Abar is None or not np.isfinite(prior).all():
            self.Pbar, self.prior_pred, self.prior_diag = None, None, None
        else:
            self.Pbar = pinv_psd(Abar)[0]
            self.prior_pred = X @ prior
            self.prior_diag = np.einsum("ij,ij->i", X @ self.Pbar, X)


class BlockEvidence(StoppingRule):
    """Closed blocks and the e-values of the directions x_i - x_j (see the module docstring): the
    stopping rule of the block Track-and-Stop (core/parts.py), fed by ``block_closed``.

    ``X``: the K x d features (full column rank is not needed); ``sigma``: sub-Gaussian scale of the
    noise; ``epsilon``: the margin aimed at; ``log_level``: log(1/delta') per direction; ``delta``: the
    level of the answer (default: the one ``log_level`` is the union bound of, ``union_level``).
    State (plain data): ``A``, ``s``, ``prior`` (lists of per-block arrays), ``shift``.
    """

    name = "block evidence"

    def __init__(self, X: np.ndarray, sigma: float, epsilon: float, log_level: float, m: int = 1,
                 delta: float | None = None):
        K = X.shape[0]
        super().__init__(epsilon, m * (K - m) * math.exp(-log_level) if delta is None else delta)
        self.X = X
        self.K, self.d = X.shape
        self.m = int(m)
        self.sigma2 = float(sigma) ** 2
        self.epsilon = float(epsilon)
        self.log_level = float(log_level)
        #: log(1 / ((K - m) w_i)) added to the level of the directions from arm i (0: uniform weights)
        self.shift = np.zeros(self.K)
        self.A: list[np.ndarray] = []
        self.s: list[np.ndarray] = []
        self.prior: list[np.ndarray] = []
        self._sumA = np.zeros((self.d, self.d))
        self._sums = np.zeros(self.d)
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._blocks: list[_BlockCache] = []
        self._leader: dict[int, list] = {}

    def reset_caches(self) -> None:
        self._reset_cache()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"A": [a.copy() for a in self.A], "s": [v.copy() for v in self.s],
                "prior": [v.copy() for v in self.prior], "shift": self.shift.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.A = [np.array(a, dtype=float) for a in state["A"]]
        self.s = [np.array(v, dtype=float) for v in state["s"]]
        self.prior = [np.array(v, dtype=float) for v in state["prior"]]
        self.shift = np.array(state["shift"], dtype=float)
        self._sumA = sum(self.A, np.zeros((self.d, self.d)))
        self._sums = sum(self.s, np.zeros(self.d))
        self._reset_cache()

    @property
    def n_blocks(self) -> int:
        return len(self.A)

    def block_closed(self, counts: np.ndarray, sums: np.ndarray) -> None:
        self.close(counts, sums)

    def candidate(self) -> np.ndarray:
        """The answer tested after a block closes: the m largest predictions of the pooled estimate
        (ties broken by a generator seeded with the number of blocks)."""
        return top_m(self.X @ self.pooled(), self.m, np.random.default_rng(self.n_blocks))

    # ------------------------------------------------------------------ blocks
    def close(self, counts: np.ndarray, sums: np.ndarray) -> None:
        """Add a finished block from its per-arm test counts and outcome sums (length K each).

        Its ``prior`` is the pooled least-squares estimate of the blocks before it (NaN for the
        first block), fixed before the block's outcomes."""
        counts = np.asarray(counts, dtype=float)
        prior = np.full(self.d, np.nan) if not self.A else pinv_psd(self._sumA)[0] @ self._sums
        A = (self.X.T * counts) @ self.X
        s = self.X.T @ np.asarray(sums, dtype=float)
        self.A.append(A)
        self.s.append(s)
        self.prior.append(prior)
        self._sumA = self._sumA + A
        self._sums = self._sums + s
        if len(self.A) == 1 and self.K - self.m > WEIGHTS_MIN_RIVALS:
            self._set_weights()

    def _set_weights(self) -> None:
        """Weights w_i of the union bound from the first block alone (before any direction starts):
        w_i = a / (K - m) + (1 - a) pi_i, a = WEIGHTS_UNIFORM, pi proportional to exp(-z_i^2 / (2 T)), z_i
        the first block's estimate of how far arm i falls below the m-th best in standard deviations.
        The directions from arm i are tested at level delta w_i / m. Valid for any a in (0, 1]: no
        direction starts before block 2, so given the first block's outcomes w is fixed and each of
        the m (K - m) directions from a non-top-m arm i fails with probability <= delta w_i / m; for
        every true top-m set T*, sum_{i not in T*} m (delta w_i / m) <= delta (a + (1 - a)) = delta,
        and taking the expectation over the first block keeps the bound. (a only sets the price:
        an arm the first block finds implausible pays at most log(1 / a) more in its level; any
        temperature T = WEIGHTS_TEMPERATURE is valid too, a smaller one puts more weight on the arms the
        first block ranks first.)"""
        pred, var = self._first_estimate()
        top = int(np.argsort(-pred, kind="stable")[self.m - 1])
        z = np.maximum(pred[top] - pred, 0.0) / np.sqrt(np.maximum(var[top] + var, 1e-300))
        pi = np.exp(-0.5 * z * z / WEIGHTS_TEMPERATURE)
        w = WEIGHTS_UNIFORM / (self.K - self.m) + (1.0 - WEIGHTS_UNIFORM) * pi / pi.sum()
        self.shift = np.log(1.0 / ((self.K - self.m) * w))

    def _first_estimate(self) -> tuple[np.ndarray, np.ndarray]:
        """The first block's predictions of every arm and their variances (the union bound's weights)."""
        P = pinv_psd(self.A[0])[0]
        return self.X @ (P @ self.s[0]), self.sigma2 * np.einsum("ij,ij->i", self.X @ P, self.X)

    def level(self, i: int) -> float:
        """log(1/delta') of the directions from arm i."""
        return self.log_level + float(self.shift[i])

    def pooled(self) -> np.ndarray:
        """The least-squares estimate (minimum norm) from all closed blocks together."""
        return pinv_psd(self._sumA)[0] @ self._sums

    def _block(self, b: int) -> _BlockCache:
        if len(self._blocks) <= b:
            Abar = sum(self.A[: len(self._blocks)], np.zeros((self.d, self.d)))
            while len(self._blocks) <= b:
                k = len(self._blocks)
                self._blocks.append(_BlockCache(self.X, self.A[k], self.s[k], self.prior[k], Abar if k else None))
                Abar = Abar + self.A[k]
        return self._blocks[b]

    def _direction_block(self, b: int, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Block b's evidence in the directions y_j = x_i - x_j, for every j: (the estimate of y_j'theta,
        centred so that it is at most y_j'theta plus a noise of variance proxy v_j given the blocks
        before; v_j; whether y_j is in the range of the block's design). Linear model: y_j'theta_b,
        sigma^2 y_j'A_b^+ y_j (module docstring); the logistic model's (``logistic_blocks``) subtracts
        its bias bound."""
        c = self._block(b)
        X = self.X
        v = self.sigma2 * np.maximum(c.diag[i] - 2.0 * (X @ (c.P @ X[i])) + c.diag, 0.0)
        ok = v > 0
        if c.XN is not None:
            out = c.XN[i] - c.XN
            norm = np.einsum("ij,ij->i", X[i] - X, X[i] - X)
            ok &= np.einsum("ij,ij->i", out, out) <= _RANGE_RTOL**2 * norm
        return c.pred[i] - c.pred, v, ok

    def _direction_prior(self, b: int, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(estimate of y_j'theta, its variance) from the blocks before block b, for the start of the
        directions' tests (a tuning choice: any value keeps the guarantee); None before block 2."""
        c = self._block(b)
        if c.Pbar is None or c.prior_pred is None or c.prior_diag is None:
            return None
        X = self.X
        sd2 = self.sigma2 * np.maximum(c.prior_diag[i] - 2.0 * (X @ (c.Pbar @ X[i])) + c.prior_diag, 0.0)
        return c.prior_pred[i] - c.prior_pred, sd2

    def _start_margin(self, b: int, i: int) -> float:
        """The margin on y'theta the start of a direction's test at block b aims at (tuning only; from
        blocks <= b alone, so the e-values do not depend on when they are computed): epsilon."""
        return self.epsilon

    def _margin(self, i: int) -> float:
        """c such that y_j'theta > -c certifies arm i beats arm j by more than -epsilon: epsilon (linear)."""
        return self.epsilon

    def _stats(self, i: int) -> list:
        """[blocks summed, started, rho, S, V, lam, q] for the directions y_j = x_i - x_j: a direction starts
        at the first block b whose pooled estimate before b has z-score margin / sd >= START_Z (all
        from blocks < b); from then on S = sum_b y'theta_b / v_b and V = sum_b 1 / v_b over the
        blocks whose design has y_j in its range, and rho = RHO_FRACTION * 2 (log_level + 3/2) /
        margin^2, the mixture's precision: a fraction of the information the test is expected to
        need, set at the start from the estimate before it; q = POINT_SHARE and lam* (module
        docstring) where the start block alone brings POINT_MIN_SHARE times that need, else q = 0."""
        K = self.K
        st = self._leader.get(i)
        if st is None:
            st = [0, np.zeros(K, dtype=bool), np.ones(K), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)]
        done, started, rho, S, V, lam, q = st
        for b in range(done, self.n_blocks):
            est, v, ok = self._direction_block(b, i)
            prior = self._direction_prior(b, i) if not started.all() else None
            if prior is not None:
                margin = prior[0] + self._start_margin(b, i)
                sd2 = prior[1]
                need = 2.0 * (self.level(i) + 1.5) / np.maximum(np.maximum(np.maximum(margin, 0.0) ** 2, sd2), 1e-300)
                share = np.where(ok, 1.0 / np.where(ok, v, 1.0), 0.0) >= START_SHARE * need
                new = ~started & (((margin > 0) & (margin * margin >= START_Z**2 * sd2)) | share)
                new[i] = False
                if new.any():
                    rho, lam, q = rho.copy(), lam.copy(), q.copy()
                    rho[new] = RHO_FRACTION * need[new]
                    info = np.where(ok, 1.0 / np.where(ok, v, 1.0), 0.0)
                    point = new & ok & (info >= POINT_MIN_SHARE * need)
                    if POINT_SHARE > 0 and point.any():
                        q[point] = POINT_SHARE
                        lam[point] = np.sqrt(2.0 * (self.level(i) - math.log(POINT_SHARE)) / info[point])
                    started = started | new
            if not started.any():
                continue
            ok &= started
            inv = np.where(ok, 1.0 / np.where(ok, v, 1.0), 0.0)
            S = S + np.where(ok, est, 0.0) * inv
            V = V + inv
        st = [self.n_blocks, started, rho, S, V, lam, q]
        self._leader[i] = st
        if len(self._leader) > 64:  # leaders of long ago: forget the oldest
            self._leader.pop(next(iter(self._leader)))
        return st

    def log_evalue(self, i: int) -> np.ndarray:
        """log E(x_i - x_j) at the boundary c = -epsilon for every j: the evidence that arm i beats
        arm j by more than -epsilon (0 for directions not started; entry i is 0)."""
        _, started, rho, S, V, lam, q = self._stats(i)
        M = S + self._margin(i) * V
        out = mixture_log_evalue(M, V, rho)
        point = (q > 0) & (V > 0)
        if point.any():  # log(q exp(lam M - lam^2 V / 2) + (1 - q) E^mix)
            out[point] = point_log_evalue(M[point], V[point], rho[point], lam[point], q[point])
        # identical features: (x_i - x_j)'theta = 0 exactly, never below -epsilon
        return np.where(self._same(i), np.inf, np.where(started, out, 0.0))

    def _same(self, i: int) -> np.ndarray:
        """Arms whose features equal arm i's (the direction is zero; entry i excluded)."""
        same = ~np.any(self.X != self.X[i], axis=1)
        same[i] = False
        return same

    def lcb(self, i: int) -> np.ndarray:
        """The one-sided confidence bound LCB(x_i - x_j) on (x_i - x_j)'theta for every j
        (-inf where the direction has no evidence yet; entry i is +inf)."""
        _, started, rho, S, V, lam, q = self._stats(i)
        M = mixture_boundary(V, rho, self.level(i) - np.log1p(-q))
        point = (q > 0) & (V > 0)
        if point.any():  # the root of log_evalue's e-value, the two parts together (what ``stops`` tests)
            M[point] = point_boundary(V[point], rho[point], lam[point], q[point], self.level(i))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(started & (V > 0), (S - M) / np.where(V > 0, V, 1.0), -np.inf)
        out[self._same(i)] = 0.0
        out[i] = np.inf
        return out

    def stops(self, answer: np.ndarray) -> bool:
        """Whether every arm of the answer beats every arm outside it, each comparison at level delta'."""
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        for i in answer:
            if not (self.log_evalue(int(i))[outside] > self.level(int(i))).all():
                return False
        return True

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        """Per arm of the answer, the smallest epsilon for which it is certified epsilon-good now:
        max(0, max_{j outside} -LCB(x_i - x_j)) (inf while some rival has no evidence; None before
        the first block closes)."""
        if not self.A:
            return None
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        out = np.empty(len(answer))
        for k, i in enumerate(answer):
            out[k] = max(0.0, float(np.max(-self.lcb(int(i))[outside])))
        return out


    def threshold(self, t: float, delta: float) -> float:
        """The evidence margin^2 V / 2 (V counting the tests from lin-tas's first designed block on) a direction
        needs at a stop after t tests at level delta; the mean evidence meets it at t = T*(theta_hat) beta(t, delta)
        (the forecast: the median of the stop's law around that t, certainty/forecast.py).

        Later blocks: the mixture of the module docstring, with rho = RHO_FRACTION V (the design's aim), crosses its
        level L (log(m (K - m) / delta), weighted for the current leader) at
        beta_mix = (1 + u)(L + (1/2) log(1 + 1/u) - log 2), u = RHO_FRACTION (the Gaussian tail's log 2 Phi ~ log 2).
        The first designed block (lin-tas's block 2, of n_2 tests after the s tests of the spanning block, which
        are no direction's evidence): a direction it settles alone carries the point mass, whose single look
        needs only beta_pt = L + log(1 / POINT_SHARE). So, while block 2 is not designed yet (``_first_block``):
        no stop before t_2 = s + n_2; at t >= t_2 the run has stopped when block 2 alone suffices,
        n_2 >= T* beta_pt, or when the blocks from 2 on do, t - s >= T* beta_mix. In the form t >= T* beta(t):
        beta(t) = min(beta_pt t / n_2, beta_mix t / (t - s)) for t >= t_2 and beta = 1e300 (no stop) below,
        which keeps t - T* beta(t) negative, then non-negative (one crossing, found by the forecast's bisection).
        Afterwards (or for another sampling rule, or block 2 sized to end the run) beta_mix alone.
        Approximations: block 2's span completion (at most d tests) and, in a campaign, the replicate wells of
        the first plate are left out of s and n_2 (forecast.stopping_time measures the whole; benchmarks/
        forecast_check.py against actual stops)."""
        mix = self.mixture_threshold(t, delta)
        first = self._first_block() if POINT_SHARE > 0 else None
        if first is None:
            return mix
        s, n2 = first
        if t < s + n2:
            return 1e300
        point = (self._leader_level(delta) - math.log(POINT_SHARE)) * t / n2
        return min(point, mix * t / (t - s))

    def mixture_threshold(self, t: float, delta: float) -> float:
        """beta_mix alone (``threshold`` without the first designed block's point mass: also the forecast before
        issue 19's fix, for benchmarks/forecast_check.py's comparison)."""
        u = RHO_FRACTION
        return (1.0 + u) * (self._leader_level(delta) + 0.5 * math.log(1.0 + 1.0 / u) - math.log(2.0))

    def _leader_level(self, delta: float) -> float:
        """L: log(1/delta') of the current leader's directions, moved from this rule's delta to ``delta``."""
        leader = int(np.asarray(self.policy._recommend(np.random.default_rng(0)))[0])
        level = self.level(leader) if self.n_blocks else self.log_level
        return level + math.log(self.delta / delta)

    def _first_block(self) -> tuple[float, float] | None:
        """(s, n_2): the tests before lin-tas's first designed block (its spanning block, or more if already
        recorded or in flight) and that block's size, max(3 d, growth s) as ``LinearTrackAndStop._design`` gives
        it at full size; None once it is designed, or when the sampling rule is not lin-tas's full first block."""
        pol = self.policy
        if not getattr(pol, "first_design_full", False) or getattr(pol, "_n_opened", 2) >= 2:
            return None
        spanner = getattr(pol, "_spanner", None)
        if spanner is None:
            return None
        s = float(max(spanner.size, pol.n_samples + pol.n_in_flight))
        n2 = float(max(3 * pol.d_eff, math.ceil(pol.growth * s)))
        n2 = min(n2, float(pol.max_samples) - s)
        return (s, n2) if n2 >= 1 else None


def union_level(delta: float, K: int, m: int) -> float:
    """log(1/delta') with delta' = delta / (m (K - m)): the directions from a non-top-m arm to a top-m arm."""
    return math.log(m * (K - m) / delta)
