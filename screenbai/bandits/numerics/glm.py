"""Logistic (GLM) maximum likelihood on per-arm counts, and the c_mu constants.

``logistic_mle`` runs a penalised Newton method on aggregated Bernoulli data: arm a was pulled
n_a times with s_a successes.  Each Newton iteration costs O(K_+ d^2 + d^3) (K_+ = arms with
n_a > 0), whatever the number of observations.  With ``lambda_reg = 0`` the maximum likelihood
estimate may not exist (separable outcomes); this is detected and reported with
``SeparableDataError`` rather than returning a diverged estimate silently.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack
from scipy.special import expit, logit

#: a fitted linear predictor beyond this (fitted mean within ~1e-13 of 0 or 1) means divergence
_SEPARATION_ETA = 30.0
#: near-separation flag for penalised fits (fitted mean within ~2e-9 of 0 or 1)
_NEAR_SEPARATION_ETA = 20.0
_DECREMENT_TOL = 1e-12
_MAX_HALVINGS = 40


class SeparableDataError(ValueError):
    """The unpenalised logistic MLE does not exist: the binary outcomes are (quasi-)separable."""


class LogisticFit(NamedTuple):
    """Result of ``logistic_mle``.

    theta: the estimate (length d).
    n_iter: Newton iterations performed (Hessians factorised).
    converged: the stopping test (step or Newton decrement) was met within ``max_iter``.
    separable_warning: near-separation flag: some pulled arm's fitted mean is within ~1e-9 of
        0 or 1, or more than 10 iterations were needed (a sign of near-separation).
    """

    theta: np.ndarray
    n_iter: int
    converged: bool
    separable_warning: bool


def logistic_into(eta: np.ndarray, out: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-eta)) into ``out``: within an ulp or two of scipy's expit and about 3 times
    faster (exp overflows to inf for eta < -709, giving exactly 0)."""
    with np.errstate(over="ignore"):
        np.negative(eta, out=out)
        np.exp(out, out=out)
        out += 1.0
        return np.reciprocal(out, out=out)


def dmu(z):
    """Derivative of the logistic function, mu'(z) = expit(z) * expit(-z), without overflow."""
    return expit(z) * expit(-z)


def _penalised_nll(eta: np.ndarray, n: np.ndarray, s: np.ndarray, theta: np.ndarray, lam: float) -> float:
    """L(theta) = -sum_a [s_a eta_a - n_a log(1 + e^eta_a)] + lam/2 ||theta||^2."""
    return float(n @ np.logaddexp(0.0, eta) - s @ eta + 0.5 * lam * (theta @ theta))


def logistic_mle(
    X,
    n,
    s,
    lambda_reg: float = 1.0,
    theta0=None,
    max_iter: int = 50,
    tol: float = 1e-8,
    decrement_tol: float = _DECREMENT_TOL,
) -> LogisticFit:
    """Penalised logistic MLE from per-arm pull counts ``n`` and success counts ``s``.

    Newton on aggregated counts: O(K d^2) per step, whatever the number of observations.

    Minimises -sum_a [s_a x_a^T theta - n_a log(1 + exp(x_a^T theta))] + lambda_reg/2 ||theta||^2
    by Newton's method (Cholesky solve, step halved until the objective decreases), warm-started
    at ``theta0``.  Stops when ||Newton step||_inf < tol or the Newton decrement g^T H^-1 g <
    ``decrement_tol`` (1e-12; the final full step is then taken, so the error is far smaller).
    Sequential callers may loosen ``decrement_tol`` (twice the remaining log-likelihood gap).

    With ``lambda_reg = 0`` the MLE may not exist.  Raises ``SeparableDataError`` when the iterates
    diverge (a pulled arm's fitted linear predictor exceeds 30 in absolute value during the
    iterations, or 20 at the end, i.e. its fitted mean is numerically 0 or 1: with separable data
    ||theta|| grows without bound while the likelihood creeps towards its supremum) or when the
    Hessian is singular (the pulled arms do not span R^d).  Never loops beyond ``max_iter``.
    """
    X = np.asarray(X, dtype=float)
    n = np.asarray(n, dtype=float).reshape(-1)
    s = np.asarray(s, dtype=float).reshape(-1)
    K, d = X.shape
    if n.shape[0] != K or s.shape[0] != K:
        raise ValueError(f"n and s need one entry per arm (K = {K}); got lengths {n.shape[0]} and {s.shape[0]}")
    lam = float(lambda_reg)
    if not lam >= 0.0:
        raise ValueError(f"lambda_reg (ridge penalty of the logistic MLE) must be >= 0; got {lambda_reg}")
    if ((s < 0) | (s > n)).any():  # also catches n < 0, since then s > n or s < 0
        raise ValueError("counts must satisfy 0 <= successes s_a <= pulls n_a for every arm")
    pulled = n > 0
    n_pulled = int(np.count_nonzero(pulled))
    if n_pulled < K // 2:  # skip unpulled arms (O(K_+ d^2)); otherwise n_a = 0 already zeroes them
        X, n, s = X[pulled], n[pulled], s[pulled]
    theta = np.zeros(d) if theta0 is None else np.array(theta0, dtype=float).reshape(-1)
    if theta.shape[0] != d:
        raise ValueError(f"theta0 has length {theta.shape[0]}, expected d = {d}")
    if n_pulled == 0:  # no data: the penalised minimiser is 0; unpenalised is undefined
        if lam == 0.0:
            raise SeparableDataError("no arm has been pulled; the unpenalised MLE is undefined (use lambda_reg > 0)")
        return LogisticFit(np.zeros(d), 0, True, False)

    eta = X @ theta
    loss = None  # evaluated only when a step has to be checked (warm starts usually need none)
    converged = False
    n_iter = 0
    diag_idx = np.arange(d)
    while n_iter < max_iter:
        p = expit(eta)
        g = X.T @ (n * p - s) + lam * theta
        w = n * p * (1.0 - p)
        H = (X.T * w) @ X
        H[diag_idx, diag_idx] += lam
        n_iter += 1
        chol, info = lapack.dpotrf(H, lower=1, clean=0)
        if info != 0:
            _raise_singular(eta, lam, info)
            H = H + (1e-10 * max(1.0, np.abs(H).max())) * np.eye(d)  # penalised: only rounding can do this
            chol, info = lapack.dpotrf(H, lower=1, clean=0)
        step, _ = lapack.dpotrs(chol, g, lower=1)
        step = -step
        decrement = -float(g @ step)
        if decrement < decrement_tol:  # take the (tiny, already solved) full step and stop
            theta = theta + step
            eta = X @ theta
            converged = True
            break
        # backtracking on the penalised objective
        if loss is None:
            loss = _penalised_nll(eta, n, s, theta, lam)
        size = 1.0
        for _ in range(_MAX_HALVINGS):
            cand = theta + size * step
            eta_c = X @ cand
            loss_c = _penalised_nll(eta_c, n, s, cand, lam)
            if loss_c <= loss + 1e-4 * size * float(g @ step):
                break
            size *= 0.5
        else:  # no decrease at machine precision: we are at the minimum
            converged = True
            break
        theta, eta, loss = cand, eta_c, loss_c
        if lam == 0.0 and np.abs(eta[n > 0]).max() > _SEPARATION_ETA:
            _raise_separable(eta, n_iter)
        if np.abs(step).max() < tol:
            converged = True
            break
    max_eta = float(np.abs(eta if n_pulled == n.size else eta[n > 0]).max())
    # near separation the Newton decrement shrinks like exp(-|eta|), so the decrement test can
    # "converge" on a diverging sequence: judge by the fitted means instead
    if lam == 0.0 and max_eta > _NEAR_SEPARATION_ETA:
        _raise_separable(eta, n_iter)
    warn = bool(max_eta > _NEAR_SEPARATION_ETA or n_iter > 10)
    return LogisticFit(theta, n_iter, converged, warn)


def _raise_separable(eta: np.ndarray, n_iter: int):
    raise SeparableDataError(
        "the unpenalised logistic MLE does not exist: the binary outcomes are (quasi-)separable by a "
        f"linear function of the features (after {n_iter} Newton iterations a fitted linear predictor "
        f"reached |x^T theta| = {np.abs(eta).max():.1f}, i.e. a fitted mean of 0 or 1, and keeps growing). "
        "Use lambda_reg > 0 (e.g. 1.0, a N(0, I) prior), which keeps the estimate finite when outcomes are separable."
    )


def _raise_singular(eta: np.ndarray, lam: float, info: int):
    if lam > 0.0:
        return
    if np.abs(eta).max() > 0.5 * _SEPARATION_ETA:
        _raise_separable(eta, -1)
    raise SeparableDataError(
        f"the Hessian of the unpenalised logistic likelihood is singular (Cholesky failed at pivot {info}): "
        "the pulled arms do not span the feature space, so the MLE is not unique. Use lambda_reg > 0, "
        "or project the features onto the span of the arms."
    )


# ---------------------------------------------------------------------- c_mu
def c_mu_oracle(X, theta_star) -> float:
    """Simulation oracle: min_a mu'(x_a^T theta*) (what [KW] most plausibly 'treated as given')."""
    return float(dmu(np.asarray(X, dtype=float) @ np.asarray(theta_star, dtype=float)).min())


def c_mu_theory(S: float, L: float) -> float:
    """Worst case over ||theta|| <= S, ||x|| <= L: mu'(S L); tiny for moderate S L."""
    if not (S >= 0 and L >= 0):
        raise ValueError(f"S and L must be non-negative; got S = {S}, L = {L}")
    return float(dmu(float(S) * float(L)))


def c_mu_plugin(X, theta_hat, norms_Minv, gamma: float = 1.0) -> float:
    """Plug-in estimate min_a mu'(|x_a^T theta_hat| + gamma ||x_a||_{M^-1}).

    ``norms_Minv`` is the vector of ||x_a||_{M^-1} (not squared).  It lower-bounds mu' over a
    confidence region of theta of radius ``gamma``.
    """
    z = np.abs(np.asarray(X, dtype=float) @ np.asarray(theta_hat, dtype=float)) + float(gamma) * np.asarray(norms_Minv)
    return float(dmu(z).min())


def mean_gap_bound(u: np.ndarray, lo_i: float, hi_i: float, hi_j: np.ndarray) -> np.ndarray:
    """The largest mu(a_j) - mu(a_i) over a_i in [lo_i, hi_i], a_j <= hi_j and a_j - a_i <= u (per entry of
    ``u`` and ``hi_j``): an upper bound on mu_j - mu_i (exact for these constraints; a_j's lower end only
    removes points). For a given a_i the best a_j is min(hi_j, a_i + u): on a_i <= hi_j - u the value is
    mu(a_i + u) - mu(a_i), unimodal and symmetric about -u/2 (largest there for u >= 0, at an end for
    u < 0), and beyond it mu(hi_j) - mu(a_i), falling in a_i."""
    u = np.asarray(u, dtype=float)
    hi_j = np.asarray(hi_j, dtype=float)

    def pair(a):
        return expit(a + u) - expit(a)

    cut = np.minimum(hi_i, hi_j - u)  # the part of [lo_i, hi_i] where a_j = a_i + u
    first = np.maximum.reduce([pair(np.full_like(u, lo_i)), pair(cut), pair(np.clip(-u / 2.0, lo_i, cut))])
    first = np.where(cut >= lo_i, first, -np.inf)
    start = np.maximum(lo_i, hi_j - u)  # the part where a_j = hi_j
    second = np.where(start <= hi_i, expit(hi_j) - expit(start), -np.inf)
    return np.maximum(first, second)


def epsilon_curve(a: float, epsilon: float) -> tuple[float, float]:
    """h(a) = logit(mu(a) + epsilon) and h'(a), for a < logit(1 - epsilon): arm j beats arm i by more than
    epsilon exactly when x_j^T theta > h(x_i^T theta). h is convex: with p = mu(a),
    h'(a) = p (1 - p) / ((p + epsilon) (1 - p - epsilon)), whose logarithm has p-derivative
    epsilon / (p (p + epsilon)) + epsilon / ((1 - p) (1 - p - epsilon)) > 0, and p rises with a."""
    p = float(expit(a))
    return float(logit(p + epsilon)), p * (1.0 - p) / ((p + epsilon) * (1.0 - p - epsilon))


def epsilon_margin(b: float, epsilon: float) -> float:
    """logit(mu(b) + epsilon) - b: how much x_j^T theta may exceed x_i^T theta = b before mu_j - mu_i > epsilon."""
    target = expit(b) + epsilon
    return math.inf if target >= 1.0 else float(logit(target)) - b
