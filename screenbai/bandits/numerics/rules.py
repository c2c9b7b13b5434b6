"""Arm-selection rules for a target direction y ([XHS18], [SLM14])."""

from __future__ import annotations

from typing import Any

import numpy as np

from screenbai.bandits.numerics.estimators import RidgeState
from screenbai.bandits.numerics.ties import BlockArgmax, argmax_random, argmin_random
from screenbai.streams import quiet_native_output


def greedy_arm(state: RidgeState, y: np.ndarray | None, rng: np.random.Generator, Py: np.ndarray | None = None) -> int:
    """argmin_a ||y||^2_{(V + x_a x_a^T)^{-1}} = argmax_a (x_a^T P y)^2 / (1 + x_a^T P x_a).

    ``Py`` = P y may be passed instead of y when the caller already has it.
    """
    if Py is None:
        assert y is not None, "greedy_arm needs the direction y or P y"
        Py = state.P @ y
    source = state.source
    if not source.large:
        proj = source.X @ Py
        for block, diag in source.blocks(proj, state.diag):
            greedy_scores(block, diag)
        return argmax_random(proj, rng)
    # large K: the product too block by block, each block used (and its argmax found) while in cache
    proj, best = np.empty(state.K), BlockArgmax()
    for block, diag, X_b in source.blocks(proj, state.diag, rows=True):
        np.matmul(X_b, Py, out=block)
        greedy_scores(block, diag)
        best.add(block)
    return best.result(proj, rng)


def greedy_scores(proj: np.ndarray, diag: np.ndarray, out: np.ndarray | None = None) -> None:
    """The greedy rule's scores (x_a^T P y)^2 / (1 + x_a^T P x_a) from proj = X P y, into ``out``
    (default: in place)."""
    out = proj if out is None else out
    np.multiply(proj, proj, out=out)
    out /= diag + 1.0


def largest_variance_arm(variances: np.ndarray, b: int, c: int, rng: np.random.Generator) -> int:
    """The candidate (b or c) with the larger variance (its mean is the most uncertain)."""
    vb, vc = variances[b], variances[c]
    if vb == vc:
        return (b, c)[int(rng.integers(2))]
    return b if vb > vc else c


def solve_cold(policy) -> None:
    """Switch the L1 designs of ``policy`` (GLGapE's ratio rule, GIFA's optimized selection) to cold-start
    LPs from now on (see :class:`L1Design`); a campaign does this right after building each policy (the
    LPs solved while it was built, the same in every process, are forgotten: none is replayed)."""
    for value in vars(policy).values():
        if isinstance(value, L1Design):
            value.cold = True
            value._history, value._replay = [], []


def colwise(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, index, value) of the matrix whose column c is ``columns[c]``, column-wise with the zeros
    left out: the arrays ``scipy.sparse.csc_matrix(columns.T)`` holds (int32 indices), built without
    scipy.sparse, whose import and conversion cost a campaign's ``next`` about 20 ms."""
    nonzero = columns != 0
    index = np.nonzero(nonzero)[1].astype(np.int32)
    start = np.zeros(columns.shape[0] + 1, dtype=np.int32)
    np.cumsum(nonzero.sum(axis=1), out=start[1:])
    return start, index, columns[nonzero]


class L1Design:
    """Optimal proportions p(y) from min ||w||_1 s.t. X^T w = y (HiGHS), cached by a key.

    The ratio rule then pulls argmin_{a: p_a > 0} T_a / p_a ([XHS18] eq. 13).

    The LP (w = u - v, u, v >= 0, standard form) is built once in a HiGHS model; each new
    direction only changes the right-hand side, so by default the dual simplex restarts from the
    previous optimal basis.  HiGHS's answer (last bits, or a vertex of a degenerate LP) then depends
    on that chain of earlier LPs, which a restored design solves again before its next new LP.

    ``cold = True`` (set by :func:`solve_cold`; campaigns do) solves every LP from HiGHS's cold start
    (``clearSolver``) instead: the answer depends on y alone, a restored design replays nothing, and a
    campaign's ``next`` costs the same in a fresh process after thousands of LPs (before: every LP of
    the campaign again).  Cold starts also measured faster per LP here (CPU for random gap directions:
    ``python benchmarks/bench_plates.py --part lab``, docs/plates.md).  The two modes choose the same
    arms up to those last bits and degenerate vertices, not bit for bit; the warm chain stays the
    default so that the documented simulation studies reproduce exactly.
    """

    def __init__(self, X: np.ndarray, zero_tol: float = 1e-10):
        self.X = X
        self.K, self.d = X.shape
        self.zero_tol = zero_tol
        self._highs: Any = None  # highspy.Highs, built on first use
        self._cache: dict = {}
        self.n_solved = 0
        self.cold = False  # True: every LP from HiGHS's cold start (see the class doc)
        self._history: list[np.ndarray] = []  # right-hand sides solved, in order (the warm-start chain)
        self._replay: list[np.ndarray] = []  # of a restored state: solved again before the next new LP

    def _model(self):
        """The HiGHS model of the LP, built on first use."""
        import highspy  # here, where the LP is built: runs without the ratio rule never load HiGHS

        with quiet_native_output():  # highspy >= 1.16 prints a banner on fd 1 when constructed
            h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")  # dense 2K x d problem, few pivots: presolve only costs
        K, d = self.K, self.d
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = 2 * K, d
        lp.col_cost_ = np.ones(2 * K)
        lp.col_lower_ = np.zeros(2 * K)
        lp.col_upper_ = np.full(2 * K, highspy.kHighsInf)
        lp.row_lower_ = lp.row_upper_ = np.zeros(d)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = 2 * K, d
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = colwise(np.vstack([self.X, -self.X]))
        h.passModel(lp)
        self._rows = np.arange(d, dtype=np.int32)
        self._optimal = highspy.HighsModelStatus.kOptimal
        return h

    def _run(self, y: np.ndarray) -> np.ndarray:
        """Solve the LP for y from the previous optimal basis (or cold, see the class doc); the minimiser w."""
        h = self._highs
        if self.cold:
            h.clearSolver()
        h.changeRowsBounds(self.d, self._rows, y, y)
        h.run()
        if h.getModelStatus() == self._optimal:
            x = np.asarray(h.getSolution().col_value)
            return x[: self.K] - x[self.K :]
        # only numerical noise can make it infeasible (y in the span): minimum-norm fallback
        h.clearSolver()
        return np.linalg.lstsq(self.X.T, y, rcond=None)[0]

    def solve(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Return (support indices, proportions on the support, rho = ||w*||_1)."""
        if self._highs is None:
            self._highs = self._model()
            if not self.cold:
                for old in self._replay:  # HiGHS's answer depends on its warm start: rebuild the chain
                    self._run(old)
                self._history, self._replay = self._replay + self._history, []
        y = np.asarray(y, dtype=float)
        w = self._run(y)
        if not self.cold:
            self._history.append(y.copy())
        self.n_solved += 1
        rho = float(np.abs(w).sum())
        if rho == 0.0:
            raise ValueError("the L1 design was asked for the zero direction; the two arms have identical features")
        support = np.flatnonzero(np.abs(w) > self.zero_tol * rho)
        p = np.abs(w[support]) / np.abs(w[support]).sum()
        return support, p, rho

    def state_dict(self) -> dict:
        """The solved proportions and the right-hand sides solved so far, in order (the warm-start
        chain a restored design solves again; empty in cold mode, which needs none)."""
        history = np.array(self._replay + self._history).reshape(-1, self.d)
        return {"n_solved": self.n_solved, "history": history,
                "cache": [[list(key) if isinstance(key, tuple) else key, s, p, rho]
                          for key, (s, p, rho) in self._cache.items()]}

    def __getstate__(self) -> dict:
        """For pickle and ``copy.deepcopy``: everything but the HiGHS model (no solver object can be
        pickled); the copy builds its own on first use and, warm-started, solves the chain of right-hand
        sides again first, as after ``load_state_dict`` (cold, there is none)."""
        state = self.__dict__.copy()
        for name in ("_highs", "_rows", "_optimal"):  # built by _model
            state.pop(name, None)
        state["_highs"] = None
        state["_replay"], state["_history"] = self._replay + self._history, []
        return state

    def load_state_dict(self, state: dict) -> None:
        self.n_solved = int(state["n_solved"])
        self._cache = {(tuple(key) if isinstance(key, list) else key): (np.asarray(s), np.asarray(p), float(rho))
                       for key, s, p, rho in state["cache"]}
        self._highs = None
        self._replay = [] if self.cold else [np.asarray(y, dtype=float) for y in state["history"]]
        self._history = []

    def proportions(self, key, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.solve(y)
        return hit

    def ratio_arm(self, key, y: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> int:
        support, p, _ = self.proportions(key, y)
        return int(support[argmin_random(counts[support] / p, rng)])
