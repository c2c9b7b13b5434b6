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

#: the update computes the greedy scores for the last pair ahead (a second vector in its pass over X,
#: about half a pass, and the scores) only while the greedy rule's pair has come back at least this
#: often (an exponential average, weight GUESS_DECAY on the past): a guess saves about a pass and a
#: half when it holds and costs about one when it does not. Measured at K = 10^6 on the benchmark's
#: features: the pair came back in 10 % of the rounds at 2 000 tests (73 % at K = 10^5); on MOSES in
#: 40-58 % (docs/scale.md). Either way the results are the same, bit for bit (tests/test_scale.py).
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
    At large K (m = 1, paired) a round reads X once when one of two guesses holds, twice otherwise:
    the greedy rule's pass computes X P x_c, and X P (x_b - x_c) as the kept Gram row X P x_b (the
    round's, b = b_t) minus it (``greedy_pair_arm``), and the update after the pull takes X P x_a
    from there when a is c (``product_for``); an update that reads X computes X P x_c for the last
    pair (b, c) too, and the greedy scores from it, which the next round takes if its pair is the
    same (``sweep_ahead``). Either way the values are computed the same way, with the same bits.
    ``products_reused`` / ``products_missed`` and ``guesses_right`` / ``guesses_wrong`` count how
    often each guess held (for benchmarks).
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
        self._Xc: np.ndarray | None = None  # X P x_c of the last greedy pass
        self._pair: tuple[TrackedRidgeState, np.ndarray, int] | None = None  # its state, P and c
        self._last_pair: tuple[int, int] | None = None  # (b, c) of the last greedy rule
        self.repeat_rate = 1.0  # how often the greedy rule's pair was the last one (GUESS_DECAY average)
        self.products_reused = self.products_missed = self.guesses_right = self.guesses_wrong = 0

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
        """The greedy rule for y = x_b - x_c at large K (m = 1, paired indices): one pass over X for
        X P x_c (kept for the update after the pull: the greedy rule mostly pulls c), X P y = X P x_b
        - X P x_c from the kept Gram row of b (the round's best arm: no pass), the scores block by
        block, each block's argmax while it is in cache."""
        st = self.ridge()
        repeat = float(self._last_pair == (b, c))
        self.repeat_rate = GUESS_DECAY * self.repeat_rate + (1.0 - GUESS_DECAY) * repeat
        self._last_pair = (b, c)
        ahead = st.ahead
        if isinstance(ahead, UcbSweep) and ahead.st is st and ahead.guess is not None:
            if ahead.guess == (b, c):  # computed by the update's sweep, the same way
                self.guesses_right += 1
                self._pair = None
                return ahead.greedy_best.result(ahead.scores, rng)
            self.guesses_wrong += 1
        Pc = st.P @ self.Z[c]
        row = st.gram_row(b)  # kept by the round (O(d))
        if self._Xc is None:
            self._Xc = np.empty(self.K)
        Xc, scores, best = self._Xc, np.empty(self.K), BlockArgmax()
        for s, e, block in st.source.products(Pc[:, None]):
            Xc[s:e] = block[0]
            pair_scores(row[s:e], block[0], st.diag[s:e], scores[s:e])
            best.add(scores[s:e], s)
        self._pair = (st, st.P.copy(), c)
        return best.result(scores, rng)

    def product_for(self, a: int) -> np.ndarray | None:
        """X P x_a from the last greedy pass if a was its c and P has not changed since, else None;
        forgets it either way (an update is coming)."""
        pair, self._pair = self._pair, None
        if pair is None:
            return None
        st, P, c = pair
        if st is not self.state or a != c or not np.array_equal(P, st.P):
            self.products_missed += 1
            return None
        self.products_reused += 1
        assert self._Xc is not None
        return self._Xc

    def sweep_ahead(self, factor, guess: bool) -> tuple:
        """(also, on_block) for ``update`` at large K (m = 1, paired, tau^LUCB), or (None, None).

        on_block: the next round's upper bounds against the kept Gram row's arm, computed during the
        update's sweep while each block is in cache; the round uses them if that arm is still the
        empirical best. ``factor()`` gives the next round's threshold factor once P is updated. With
        ``guess`` (the update reads X anyway), also() = P x_c for the last pair (b, c), once P is
        updated, when b's Gram row is the kept one and pairs have come back often enough
        (GUESS_MIN_RATE): the update's product gives X P x_c and the sweep the greedy scores from
        the kept row, as ``greedy_pair_arm`` computes them."""
        st = self.ridge()
        if not (self.single_paired and st.source.large and st._row is not None):
            return None, None
        pair = self._last_pair if guess and self.repeat_rate >= GUESS_MIN_RATE else None
        if pair is not None and not st.keeps_row(pair[0]):  # b's row is not the kept one: no guess
            pair = None
        also = None if pair is None else (lambda: st.P @ self.Z[pair[1]])
        return also, UcbSweep(st, st._row_arm, factor, st.mu, pair)

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
        if self.guess is not None:
            assert Xc is not None, "a guessed pair needs X P x_c from the update's product"
            pair_scores(self.row[s:e], Xc[s:e], st.diag[s:e], self.scores[s:e])
            self.greedy_best.add(self.scores[s:e], s)
