"""Each compound's hit rate (or mean readout) as the outcomes so far describe it, for status, the report and the
export: the observed rate's Wilson interval, the shared model's estimate, and the intervals "still in contention"
counts. Descriptive (intervals at a fixed number of tests), not the algorithms' confidence bounds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from screenbai.campaign.lab.assay import models_features

from .forecast import Z95


def wilson_intervals(successes: np.ndarray, n: np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score intervals of binomial proportions (sensible at 0/n and n/n, unlike the Wald one), elementwise;
    [0, 1] where n = 0."""
    s, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    tested = n > 0
    safe = np.where(tested, n, 1.0)
    p = s / safe
    denom = 1.0 + z * z / safe
    centre = (p + z * z / (2 * safe)) / denom
    half = z * np.sqrt(np.maximum(p * (1 - p) / safe + z * z / (4 * safe * safe), 0.0)) / denom
    # at 0/n (n/n) the lower (upper) end is exactly 0 (1); the formula leaves rounding residue (5.6e-17)
    lo = np.where(tested & (s > 0), np.maximum(centre - half, 0.0), 0.0)
    hi = np.where(tested & (s < n), np.minimum(centre + half, 1.0), 1.0)
    return lo, hi


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """``wilson_intervals`` of one proportion."""
    lo, hi = wilson_intervals(np.array([successes]), np.array([n]), z)
    return float(lo[0]), float(hi[0])


def rate_text(p: float) -> str:
    """A hit rate as read: 3 significant digits, but "> 0.999" / "< 0.001" near the ends, where rounding would
    print 1 or 0, a certainty no finite number of tests gives (e.g. a model's extrapolation to an untested
    compound: "model hit rate 1 [1, 1]" read as sure)."""
    if p > 0.999:
        return "> 0.999"
    if p < 0.001:
        return "< 0.001" if p > 0 else "0"
    return f"{p:.3g}"


def readout_sign(camp) -> float:
    """-1 where lower is better on a continuous readout (``--hit-below``: an IC50), to order compounds best first on
    the readout's own scale; else 1."""
    readout = camp.readout
    return -1.0 if readout is not None and not camp.binary and readout.direction == "below" else 1.0


def read_back(camp) -> Callable:
    """The map from what the algorithm is told of a continuous readout back to the readout's own scale
    (``Readout.as_read``: negated back with --hit-below, 10**x for a concentration told as log10); the identity
    for 0/1 outcomes and for outcomes without a declared readout."""
    readout = camp.readout
    return readout.as_read if readout is not None and not camp.binary else _same


def _same(value):
    return value


def as_read(back: Callable, value, low, high):
    """A mean and its interval on the readout's own scale (``read_back``): each mapped back, the interval's ends in
    order (negation swaps them). Works on numbers and arrays alike."""
    a, b = back(low), back(high)
    return back(value), np.minimum(a, b), np.maximum(a, b)


def model_estimates(
    X: np.ndarray, n: np.ndarray, s: np.ndarray, s2: np.ndarray, *, binary: bool, lambda_reg: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every compound's estimated mean outcome and 95 % interval from the shared model.

    Binary: penalised logistic MLE on the per-compound counts (as GLGapE / GSE-Log fit it), the
    interval from the Fisher information on the logit scale.  Continuous: ridge regression, the
    noise variance from the residuals.  These are descriptive (a fixed-x Wald interval, not a
    bandit confidence bound valid at every round).
    """
    from scipy.linalg import cho_factor, cho_solve
    from scipy.special import expit

    d = X.shape[1]
    if binary:
        from screenbai.bandits.numerics.glm import logistic_mle

        theta = logistic_mle(X, n, s, lambda_reg).theta
        eta = X @ theta
        w = n * expit(eta) * expit(-eta)
        H = (X.T * w) @ X + lambda_reg * np.eye(d)
        var = np.einsum("ij,ij->i", X, cho_solve(cho_factor(H), X.T).T)
        half = Z95 * np.sqrt(np.maximum(var, 0.0))
        return expit(eta), expit(eta - half), expit(eta + half)
    V = (X.T * n) @ X + lambda_reg * np.eye(d)
    cf = cho_factor(V)
    theta = cho_solve(cf, X.T @ s)
    m = X @ theta
    rss = float(np.sum(s2 - 2 * m * s + n * m * m))
    sigma2 = rss / max(int(n.sum()) - d, 1)
    var = sigma2 * np.einsum("ij,ij->i", X, cho_solve(cf, X.T).T)
    half = Z95 * np.sqrt(np.maximum(var, 0.0))
    return m, m - half, m + half


def contention_intervals(
    camp, n: np.ndarray, s: np.ndarray, s2: np.ndarray, estimates: tuple | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Every compound's 95 % interval for "still in contention": the shared model's (``model_estimates``) where the
    algorithm models the features, else each compound's own wells' (``own_intervals``). ``estimates``: the
    ``model_estimates`` of these outcomes if the caller has them (a fit and an O(K d^2) pass over the library saved)."""
    if models_features(camp.algorithm):
        if estimates is not None:
            return estimates[1], estimates[2]
        return model_estimates(camp.features, n, s, s2, binary=camp.binary)[1:]
    return own_intervals(n, s, s2, binary=camp.binary)


def own_intervals(n: np.ndarray, s: np.ndarray, s2: np.ndarray, *, binary: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every compound's 95 % interval from its own wells alone: Wilson's for 0/1 outcomes; for a readout, Student's
    for its mean (n - 1 degrees of freedom: two wells say little of their spread). A compound never tested, or tested
    once for a readout, reaches everything (0 and 1 for hit rates, -inf and inf for a readout)."""
    if binary:
        return wilson_intervals(s, n)
    from scipy.stats import t as student

    n, s, s2 = (np.asarray(v, dtype=float) for v in (n, s, s2))
    m = np.divide(s, n, out=np.zeros_like(s), where=n > 0)
    twice = n > 1
    var = np.divide(np.maximum(s2 - n * m * m, 0.0), n - 1, out=np.zeros_like(s), where=twice)
    q = student.ppf(0.975, np.maximum(n - 1, 1.0))
    half = q * np.sqrt(np.divide(var, n, out=np.zeros_like(s), where=twice))
    return np.where(twice, m - half, -np.inf), np.where(twice, m + half, np.inf)
