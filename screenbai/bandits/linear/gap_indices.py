"""Gap indices of the GIFA family and the round computed from them ([RKD21] Alg. 1).

B[i, j] = mu_hat_i - mu_hat_j + W(i, j) bounds mu_i - mu_j from above, with W(i, j) = f ||x_i - x_j||_P
(paired), f (||x_i||_P + ||x_j||_P) (individual) or f (1/sqrt(N_i) + 1/sqrt(N_j)) (classical).  From B a
round picks the candidate set J(t), the pair (b_t, c_t) and the stopping statistic.  When J(t) is the
empirical top-m, b_t is LUCB-type and the stopping rule is tau^LUCB, only the m columns B[:, J] are
built: O(m K d + d^2); otherwise the full K x K matrix (from the Gram matrix kept by the estimator),
except for individual/classical indices, which separate (O(K log K)).
"""

from __future__ import annotations

import numpy as np

from screenbai.bandits.numerics.estimators import TrackedRidgeState
from screenbai.bandits.numerics.rules import greedy_scores
from screenbai.bandits.numerics.ties import BlockArgmax, argmax_random, swap_to_twin, top_m

#: the update computes the greedy scores for the last pair ahead (from the two kept Gram rows, while
#: they are in cache: no pass over X, an elementwise chain per block) only while the greedy rule's pair
#: has come back at least this often (an exponential average, weight GUESS_DECAY on the past): a right
#: guess saves the greedy rule's own sweep over the two rows and the diagonal, a wrong one costs the
#: scores. Either way the results are the same, bit for bit (tests/test_scale.py).
GUESS_MIN_RATE = 0.6
GUESS_DECAY = 0.9


def max_m_per_column(B: np.ndarray, m: int) -> np.ndarray:
    """max^m_{i != j} B[i, j] for every column j (the diagonal must hold -inf)."""
    if m == 1:
        return B.max(axis=0)
    K = B.shape[0]
    return np.partition(B, K - m, axis=0)[K - m]


def lucb_statistic(B: np.ndarray, J: np.ndarray) -> float:
    """tau^LUCB statistic max_{j in J} max_{i not in J} B[i, j] ."""
    out = np.ones(B.shape[0], dtype=bool)
    out[J] = False
    return float(B[np.ix_(out, J)].max())


def ugape_statistic(B: np.ndarray, J: np.ndarray, m: int) -> float:
    """tau^UGapE statistic max_{j in J} max^m_{i != j} B[i, j] ; never above lucb_statistic (Lemma 1)."""
    return float(max_m_per_column(B, m)[J].max())


class GapIndices:
    """The gap indices of one GIFA policy: features Z, the ridge estimator (None for classical
    indices) and the choices of index, J(t), b_t and stopping statistic.

    ``Pxb`` keeps (b_t, P x_b) from the last round when it was computed anyway, for the greedy rule.
    At large K (m = 1, paired) a round reads X at most twice, and not at all when c_t is c_{t-1} and the
    greedy rule pulls c_t or b_t: the greedy rule takes X P (x_b - x_c) as the kept Gram row of b (the
    round's best arm) minus that of c, the estimator's second kept row (``greedy_pair_arm``: one pass
    over X when c_t changed, then kept); the update takes X P x_a from a kept row when a is c or b
    (``product_for``), else reads X; both rows follow every update by rank one. An update also computes
    the greedy scores for the last pair (b, c) from the two rows, which the next round takes if its
    pair is the same (``sweep_ahead``; the same operations on the same rows: the same bits).
    ``products_reused`` / ``products_missed`` (the update), ``rows_reused`` / ``rows_missed`` (the
    greedy rule) and ``guesses_right`` / ``guesses_wrong`` count how often each held (for benchmarks).
    """

    def __init__(self, Z: np.ndarray, state: TrackedRidgeState | None, index: str, m: int,
                 compute_jt: str, compute_bt: str, stopping: str):
        self.Z, self.state, self.index, self.m = Z, state, index, m
        self.K = Z.shape[0]
        self.compute_jt, self.compute_bt, self.stopping = compute_jt, compute_bt, stopping
        self.fast = compute_jt == "empirical" and compute_bt == "lucb" and stopping == "lucb"
        self._ZT = np.ascontiguousarray(Z.T)  # contiguous copy: (m x d) @ (d x K) is 2x faster
        self._PZ_J: np.ndarray | None = None
        self.Pxb: tuple[int, np.ndarray] | None = None
        self.single_paired = self.fast and m == 1 and index == "paired"
        self._last_pair: tuple[int, int] | None = None  # (b, c) of the last greedy rule
        self.repeat_rate = 1.0  # how often the greedy rule's pair was the last one (GUESS_DECAY average)
        self.products_reused = self.products_missed = self.guesses_right = self.guesses_wrong = 0
        self.rows_reused = self.rows_missed = 0

    def ridge(self) -> TrackedRidgeState:
        assert self.state is not None, "linear (paired or individual) indices need the ridge estimator"
        return self.state

    def individual_widths(self, f: float, n: np.ndarray) -> np.ndarray:
        """Widths of the individual (f ||x_a||_P) or classical (f / sqrt(N_a)) indices."""
        if self.index == "individual":
            return f * np.sqrt(self.ridge().diag)
        return f / np.sqrt(np.maximum(n, 1))

    def single_paired_round(self, mu: np.ndarray, f: float, rng: np.random.Generator):
        """m = 1, paired indices, tau^LUCB (LinGapE / m-LinGapE): one Gram row, O(Kd + d^2)."""
        st = self.ridge()
        if not st.source.large:  # small K: one block, nothing computed ahead
            i = argmax_random(mu, rng)
            self.Pxb = (i, st.P @ self.Z[i])
            ucb = np.empty(self.K)
            for block, row, diag, mu_b in st.source.blocks(ucb, st.gram_row(i), st.diag, mu):
                upper_bounds(block, row, diag, st.diag[i], f, mu_b)
            ucb[i] = -np.inf
            c = argmax_random(ucb, rng)
            return np.array([i]), i, c, float(ucb[c] - mu[i])
        top = st.mu_top if mu is st.mu else None  # found by the last update's sweep (large K)
        i = argmax_random(mu, rng) if top is None else top.result(mu, rng)
        ahead = st.ahead if mu is st.mu else None
        if isinstance(ahead, UcbSweep) and ahead.i != i and ahead.f == f and st.is_twin(i, ahead.i, mu):
            ahead.best, ahead.i = swap_to_twin(ahead.ucb, ahead.i, i), i  # the same values against i
        if isinstance(ahead, UcbSweep) and ahead.i == i and ahead.f == f:  # computed by the update's sweep
            ucb, best = ahead.ucb, ahead.best
        else:
            sweep = UcbSweep(st, i, f, mu)
            for s, e in st.source.bounds():
                sweep(s, e)
            ucb, best = sweep.ucb, sweep.best
        c = best.result(ucb, rng)
        return np.array([i]), i, c, float(ucb[c] - mu[i])

    def greedy_pair_arm(self, b: int, c: int, rng: np.random.Generator) -> int:
        """The greedy rule for y = x_b - x_c at large K (m = 1, paired indices): X P y = X P x_b - X P x_c
        from the kept Gram row of b (the round's best arm) and that of c, the estimator's second kept row
        (``RidgeState.keep_second``; both updated by rank one with every outcome); the scores block by
        block, each block's argmax while it is in cache. When c's row is not kept (c_t changed), one pass
        over X computes it, and it is kept: the greedy rule mostly pulls c, whose X P x_c the update then
        takes, and c_t comes back in about half the rounds (docs/scale.md)."""
        st = self.ridge()
        repeat = float(self._last_pair == (b, c))
        self.repeat_rate = GUESS_DECAY * self.repeat_rate + (1.0 - GUESS_DECAY) * repeat
        self._last_pair = (b, c)
        ahead = st.ahead
        if isinstance(ahead, UcbSweep) and ahead.st is st and ahead.guess is not None:
            if ahead.guess == (b, c):  # computed by the update's sweep, the same way
                self.guesses_right += 1
                self.rows_reused += 1
                return ahead.greedy_best.result(ahead.scores, rng)
            self.guesses_wrong += 1
        row = st.gram_row(b)  # kept by the round (O(d))
        Xc = st.kept_row(c)
        scores, best = np.empty(self.K), BlockArgmax()
        if Xc is not None and Xc is not row:
            self.rows_reused += 1
            for s, e in st.source.bounds():
                pair_scores(row[s:e], Xc[s:e], st.diag[s:e], scores[s:e])
                best.add(scores[s:e], s)
            return best.result(scores, rng)
        self.rows_missed += 1
        Xc = np.empty(self.K)
        for s, e, block in st.source.products((st.P @ self.Z[c])[:, None]):
            Xc[s:e] = block[0]
            pair_scores(row[s:e], Xc[s:e], st.diag[s:e], scores[s:e])
            best.add(scores[s:e], s)
        st.keep_second(c, Xc)
        return best.result(scores, rng)

    def product_for(self, a: int) -> np.ndarray | None:
        """X P x_a if the estimator keeps row a (the greedy rule's c, or the round's best arm), else None
        (the update computes it)."""
        st = self.state
        if a < 0 or st is None or not st.keep_row:
            return None
        row = st.kept_row(a)
        if row is None:
            self.products_missed += 1
        else:
            self.products_reused += 1
        return row

    def sweep_ahead(self, factor, guess: bool) -> UcbSweep | None:
        """``on_block`` for ``update`` at large K (m = 1, paired, tau^LUCB), or None.

        The next round's upper bounds against the kept Gram row's arm, computed during the
        update's sweep while each block is in cache; the round uses them if that arm is still the
        empirical best. ``factor()`` gives the next round's threshold factor once P is updated. With
        ``guess``, also the greedy scores for the last pair (b, c), from the two kept rows (b's and c's,
        updated in the same sweep) as ``greedy_pair_arm`` computes them, when both are kept and pairs
        have come back often enough (GUESS_MIN_RATE)."""
        st = self.ridge()
        if not (self.single_paired and st.source.large and st._row is not None):
            return None
        pair = self._last_pair if guess and self.repeat_rate >= GUESS_MIN_RATE else None
        if pair is not None and not (st.keeps_row(pair[0]) and st._second is not None
                                     and st.kept_row(pair[1]) is st._second):
            pair = None  # b's row is not the first kept one, or c's not the second: no guess
        return UcbSweep(st, st._row_arm, factor, st.mu, pair)

    def columns_of_J(self, mu: np.ndarray, J: np.ndarray, f: float, n: np.ndarray) -> np.ndarray:
        """BJ[k, i] = B[i, J[k]] for every arm i (m x K), with -inf where i is in J."""
        BJ = self.bounds_against(mu, J, f, n)
        BJ[:, J] = -np.inf
        return BJ

    def bounds_against(self, mu: np.ndarray, J: np.ndarray, f: float, n: np.ndarray) -> np.ndarray:
        """BJ[k, i] = B[i, J[k]] = mu_i - mu_J[k] + W(i, J[k]) for every arm i (m x K), -inf at i = J[k]
        only: the upper bounds on mu_i - mu_J[k] (the certificate's U, certainty/certificate.py). O(m K d)."""
        if self.index == "paired":
            st = self.ridge()
            self._PZ_J = PZ_J = self.Z[J] @ st.P  # rows P x_j, j in J
            W2 = PZ_J @ self._ZT  # Gram rows of J
            W2 *= -2.0
            W2 += st.diag
            W2 += st.diag[J][:, None]
            np.maximum(W2, 0.0, out=W2)
            BJ = np.sqrt(W2)
            BJ *= f
            BJ += mu
            BJ -= mu[J][:, None]
        else:
            w = self.individual_widths(f, n)
            BJ = (mu + w) - (mu[J] - w[J])[:, None]
        BJ[np.arange(len(J)), J] = -np.inf
        return BJ

    def index_matrix(self, mu: np.ndarray, f: float, n: np.ndarray) -> np.ndarray:
        """The full K x K matrix B[i, j] (diagonal -inf): O(K^2)."""
        if self.index == "paired":
            st = self.ridge()
            assert st.G is not None, "the full index matrix needs the Gram matrix (gram=True)"
            B = st.G * -2.0  # in place from here on: K x K temporaries dominate the cost
            B += st.diag[:, None]
            B += st.diag
            np.maximum(B, 0.0, out=B)
            np.sqrt(B, out=B)
            B *= f
        else:
            w = self.individual_widths(f, n)
            B = w[:, None] + w[None, :]
        B += mu[:, None]
        B -= mu[None, :]
        np.fill_diagonal(B, -np.inf)
        return B

    def round(
        self, mu: np.ndarray, f: float, n: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, int, int, float]:
        """J(t), b_t, c_t and the stopping statistic for estimated means mu, threshold factor f and
        per-arm counts n ([RKD21] Alg. 1)."""
        m = self.m
        if self.fast:
            if m == 1 and self.index == "paired":
                return self.single_paired_round(mu, f, rng)
            J = top_m(mu, m, rng)
            BJ = self.columns_of_J(mu, J, f, n)
            k, c = divmod(argmax_random(BJ.ravel(), rng), self.K)
            b = int(J[k])
            if self.index == "paired":
                assert self._PZ_J is not None  # set by columns_of_J
                self.Pxb = (b, self._PZ_J[k])
            return J, b, int(c), float(BJ[k, c])
        if self.index != "paired":
            return self.separable_round(mu, f, n, rng)
        B = self.index_matrix(mu, f, n)
        colm = max_m_per_column(B, m)
        J = top_m(-colm, m, rng) if self.compute_jt == "ugape" else top_m(mu, m, rng)
        outside = np.ones(self.K, dtype=bool)
        outside[J] = False
        lucb_cols = B[outside][:, J].max(axis=0)  # max_{i not in J} B[i, j], j in J
        if self.compute_bt == "gifa":
            b = int(J[argmax_random(colm[J], rng)])
        else:
            b = int(J[argmax_random(lucb_cols, rng)])
        col = np.where(outside, B[:, b], -np.inf)
        c = argmax_random(col, rng)
        stat = float(colm[J].max()) if self.stopping == "ugape" else float(lucb_cols.max())
        return J, b, int(c), stat

    def separable_round(
        self, mu: np.ndarray, f: float, n: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, int, int, float]:
        """``round`` for individual/classical indices in O(K log K), without the K x K matrix.

        Here B[i, j] = U_i - L_j (U = mu + w, L = mu - w), so the m-th largest entry of column j
        over i != j is the m-th largest U when j is not among the m largest U, else the (m+1)-th.
        """
        m = self.m
        w = self.individual_widths(f, n)
        U, L = mu + w, mu - w
        order = np.argsort(-U, kind="stable")
        in_top = np.zeros(self.K, dtype=bool)
        in_top[order[:m]] = True
        colm = np.where(in_top, U[order[m]], U[order[m - 1]]) - L
        J = top_m(-colm, m, rng) if self.compute_jt == "ugape" else top_m(mu, m, rng)
        U_out = U.copy()
        U_out[J] = -np.inf
        c = argmax_random(U_out, rng)  # argmax over i not in J of B[i, b], whatever b
        lucb_cols = U[c] - L[J]  # max over i not in J of B[i, j], j in J
        if self.compute_bt == "gifa":
            b = int(J[argmax_random(colm[J], rng)])
        else:
            b = int(J[argmax_random(lucb_cols, rng)])
        stat = float(colm[J].max()) if self.stopping == "ugape" else float(lucb_cols.max())
        return J, b, int(c), stat


def pair_scores(row: np.ndarray, Xc: np.ndarray, diag: np.ndarray, out: np.ndarray) -> None:
    """The greedy rule's scores for y = x_b - x_c into ``out``, from row b of G = X P X^T and X P x_c:
    X P y = row - X P x_c (the one way, whoever computes them)."""
    np.subtract(row, Xc, out=out)
    greedy_scores(out, diag)


def upper_bounds(out: np.ndarray, row: np.ndarray, diag: np.ndarray, diag_i: float, f: float,
                 mu: np.ndarray) -> None:
    """B[j, i] + mu_i = mu_j + f ||x_j - x_i||_P into ``out``, from row i of G = X P X^T and its diagonal."""
    np.multiply(row, -2.0, out=out)
    out += diag
    out += diag_i  # ||x_j - x_i||_P^2
    np.maximum(out, 0.0, out=out)
    np.sqrt(out, out=out)
    out *= f
    out += mu


class UcbSweep:
    """B[j, i] + mu_i = mu_j + f ||x_j - x_i||_P for every arm j (-inf at i), block by block, with
    their argmax; ``f`` may be a function, called once P is final (before the first block). With a
    ``guess`` (b, c), also the greedy scores for y = x_b - x_c and their argmax, from the kept Gram
    row (b's) and the blocks of X P x_c given to each call (the update's second column)."""

    def __init__(self, st: TrackedRidgeState, i: int, f, mu: np.ndarray, guess: tuple[int, int] | None = None):
        self.st, self.i, self.f, self.mu, self.guess = st, i, f, mu, guess
        self.row = st.gram_row(i)  # row i of G (the kept row is updated in place by the sweep)
        self.ucb = np.empty(st.K)
        self.best = BlockArgmax()
        if guess is not None:
            self.scores, self.greedy_best = np.empty(st.K), BlockArgmax()

    def __call__(self, s: int, e: int, Xc: np.ndarray | None = None) -> None:
        st, i = self.st, self.i
        if callable(self.f):
            self.f = self.f()
        block = self.ucb[s:e]
        upper_bounds(block, self.row[s:e], st.diag[s:e], st.diag[i], self.f, self.mu[s:e])
        if s <= i < e:
            block[i - s] = -np.inf
        self.best.add(block, s)
        if self.guess is not None:  # c's row: the estimator's second kept row, final on this block
            assert st._second is not None, "a guessed pair needs the kept row of c"
            pair_scores(self.row[s:e], st._second[s:e], st.diag[s:e], self.scores[s:e])
            self.greedy_best.add(self.scores[s:e], s)
