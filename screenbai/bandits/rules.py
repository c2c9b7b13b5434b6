"""Arm-selection rules for a target direction y (spec 1.6)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from .estimators import RidgeState
from .policy import argmax_random, argmin_random


def greedy_arm(state: RidgeState, y: np.ndarray, rng: np.random.Generator) -> int:
    """argmin_a ||y||^2_{(V + x_a x_a^T)^{-1}} = argmax_a (x_a^T P y)^2 / (1 + x_a^T P x_a)."""
    proj = state.X @ (state.P @ y)
    return argmax_random(proj * proj / (1.0 + state.diag), rng)


def largest_variance_arm(state: RidgeState, b: int, c: int, rng: np.random.Generator) -> int:
    """The candidate (b or c) whose mean is the most uncertain."""
    vb, vc = state.diag[b], state.diag[c]
    if vb == vc:
        return (b, c)[int(rng.integers(2))]
    return b if vb > vc else c


class L1Design:
    """Optimal proportions p(y) from min ||w||_1 s.t. X^T w = y (HiGHS), cached by a key.

    The ratio rule then pulls argmin_{a: p_a > 0} T_a / p_a (spec 1.6(ii)).
    """

    def __init__(self, X: np.ndarray, zero_tol: float = 1e-10):
        self.X = X
        self.K, self.d = X.shape
        self.zero_tol = zero_tol
        self._A_eq = np.hstack([X.T, -X.T])
        self._c = np.ones(2 * self.K)
        self._cache: dict = {}
        self.n_solved = 0

    def solve(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Return (support indices, proportions on the support, rho = ||w*||_1)."""
        res = linprog(self._c, A_eq=self._A_eq, b_eq=y, bounds=(0, None), method="highs")
        self.n_solved += 1
        if res.status == 0:
            w = res.x[: self.K] - res.x[self.K :]
        else:  # only numerical noise can make it infeasible (y in the span): minimum-norm fallback
            w = np.linalg.lstsq(self.X.T, y, rcond=None)[0]
        rho = float(np.abs(w).sum())
        if rho == 0.0:
            raise ValueError("the L1 design was asked for the zero direction; the two arms have identical features")
        support = np.flatnonzero(np.abs(w) > self.zero_tol * rho)
        p = np.abs(w[support]) / np.abs(w[support]).sum()
        return support, p, rho

    def proportions(self, key, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.solve(y)
        return hit

    def ratio_arm(self, key, y: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> int:
        support, p, _ = self.proportions(key, y)
        return int(support[argmin_random(counts[support] / p, rng)])
