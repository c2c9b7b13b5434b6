"""The characteristic time T*(theta) of a fixed-confidence identification problem and its optimal
allocation w*(theta): the lower bound as a tool (../shared/spec/LOWER_BOUND.md, docs/lower_bound.md).

For any delta-correct algorithm (Garivier & Kaufmann 2016, Thm 1; Soare, Lazaric & Munos 2014 for
linear bandits; Degenne & Koolen 2019 for problems with several correct answers)

    E[tests] >= T*(theta) kl(delta, 1 - delta) >= T*(theta) log(1 / (2.4 delta)),
    1 / T*(theta) = max_{answer a correct for theta} max_w inf_{lambda in Alt(a)} sum_k w_k KL_k(theta, lambda).

**Alternatives.** An answer is a set S of m arms (m = 1: one arm). Alt(S) = {lambda : some j outside S
beats some i inside S by more than epsilon} (LOWER_BOUND.md; for m > 1 and epsilon > 0 this set
contains the parameters under which S is not (epsilon, m)-correct, so the bound it gives is an upper
estimate of the exact one there; at epsilon = 0 both coincide). It is a union of half-spaces (linear)
or of their linearisations at theta (the logistic local form), one per pair p = (i, j), and

    inf_{lambda : y_p'(theta - lambda) <= -g_p} (theta - lambda)' A (theta - lambda) / 2 = g_p^2 / (2 ||y_p||^2_{A^-1}),

so that, with c = 2 sigma^2 (linear) or 2 (logistic local),

    T(w) = c max_p ||y_p||^2_{A(w)^-1} / g_p^2,        T* = min_w T(w)   (for one answer).

- linear-Gaussian: KL_k = (x_k'(theta - lambda))^2 / (2 sigma^2); A(w) = sum_k w_k x_k x_k';
  y_p = x_i - x_j, g_p = theta'(x_i - x_j) + epsilon (LOWER_BOUND.md "Closed forms"; Soare et al. 2014 eq. 3);
- logistic, local Fisher form (epsilon on the means, GLGapE's convention): KL_k ~ mu'(x_k'theta)
  (x_k'(theta - lambda))^2 / 2, A(w) = H(w, theta) = sum_k w_k mu'(x_k'theta) x_k x_k'; the constraint
  mu(x_j'lambda) - mu(x_i'lambda) > epsilon linearised at theta: y_p = mu'_i x_i - mu'_j x_j,
  g_p = mu_i - mu_j + epsilon;
- logistic, exact (``exact=True``, small instances): the Bernoulli KL and the constraint itself, the
  inner infimum by a convex constrained minimisation (SQP, batched over pairs) and the outer maximum by
  Kelley's cutting planes.

The solver of the local form (and the instance's pairs and answers) is in ``local_form``; the exact
logistic bound in ``exact_logistic``; this module is the entry point that picks one.
"""

from __future__ import annotations

import math

import numpy as np
from threadpoolctl import threadpool_limits

from screenbai.bandits.certainty.exact_logistic import exact_allocation_time, exact_characteristic_time
from screenbai.bandits.certainty.local_form import (  # noqa: F401 - Complexity, EXACT_MAX_PAIRS, xy_design re-exported
    EXACT_MAX_PAIRS,
    MODELS,
    Complexity,
    _answers,
    _check,
    _means,
    _Model,
    _Pairs,
    exact_pairs_affordable,
    local_characteristic_time,
    xy_design,
)


def characteristic_time(
    X,
    theta,
    *,
    model: str = "linear",
    sigma: float = 1.0,
    epsilon: float = 0.0,
    m: int = 1,
    tol: float = 1e-3,
    max_iter: int = 2_000,
    answer=None,
    w0=None,
    exact: bool = False,
) -> Complexity:
    """T*(theta) and w*(theta) (module docstring; LOWER_BOUND.md "The lower bound").

    1 / T* = max over correct answers a (every epsilon-good arm when m = 1, the top-m set when m > 1,
    or ``answer``) of max_w inf_{lambda in Alt(a)} sum_k w_k KL_k. ``tol``: relative duality gap at
    which the solver stops (T_star is within a factor 1 + tol of the optimum). ``w0``: a warm start
    (e.g. the previous plate's allocation), or a previous solve of the same arms (a Complexity, e.g. at a nearby
    theta: its allocation's arms and its working pairs start the solver, which then needs fewer rounds).
    ``exact`` (logistic only, small instances): the exact Bernoulli-KL bound instead of the local Fisher form.
    """
    X, theta, m = _check(X, theta, model, sigma, epsilon, m)
    if not tol > 0:
        raise ValueError(f"tol (the relative duality gap to reach) must be > 0; got {tol!r}")
    mu = _means(X, theta, model)
    if exact:
        if model != "logistic":
            raise ValueError("exact=True is for the logistic model (the linear-Gaussian bound is exact already)")
        return exact_characteristic_time(X, theta, epsilon=epsilon, m=m, tol=tol, answer=answer)
    return local_characteristic_time(X, theta, mu, model=model, sigma=sigma, epsilon=epsilon, m=m, tol=tol,
                                     max_iter=max_iter, answer=answer, w0=w0)


def allocation_time(
    X,
    theta,
    w,
    *,
    model: str = "linear",
    sigma: float = 1.0,
    epsilon: float = 0.0,
    m: int = 1,
    answer=None,
    exact: bool = False,
) -> float:
    """T(w) = 1 / inf_{lambda in Alt} sum_k w_k KL_k(theta, lambda) for an allocation w (any nonnegative
    weights, normalised here): the time an algorithm sampling in proportions w needs per unit of
    log(1/delta). With ``answer=None``, the smallest over the correct answers (the sampling factor's
    T(w_hat) in LOWER_BOUND.md); min_w T(w) = T*. inf when A(w) misses a direction the answer needs.
    ``exact`` (logistic only, small instances): under the Bernoulli KL (``exact_allocation_time``; nan
    where a pair's minimisation converged neither by Newton nor by SLSQP)."""
    X, theta, m = _check(X, theta, model, sigma, epsilon, m)
    w = np.asarray(w, dtype=float).reshape(-1)
    if w.size != X.shape[0] or not np.isfinite(w).all() or w.min() < 0 or w.sum() <= 0:
        raise ValueError(f"w must hold {X.shape[0]} finite nonnegative weights, not all zero; got shape {w.shape}")
    w = w / w.sum()
    if exact:
        if model != "logistic":
            raise ValueError("exact=True is for the logistic model (the linear-Gaussian bound is exact already)")
        return exact_allocation_time(X, theta, w, epsilon=epsilon, m=m, answer=answer)
    mu = _means(X, theta, model)
    mdl = _Model(X, theta, model, sigma)
    with threadpool_limits(limits=1):  # d x d products: threads only add overhead (and oversubscribe a busy machine)
        return min((_Pairs(mdl, epsilon, a).time(w) for a in _answers(mu, epsilon, m, answer)), default=math.inf)


def log_factor(delta: float) -> float:
    """log(1 / (2.4 delta)), the lower bound's factor (Garivier & Kaufmann 2016, Thm 1 and Remark); 0 for
    delta >= 1 / 2.4, where the bound says nothing."""
    if not (isinstance(delta, (int, float, np.floating)) and 0 < delta < 1):
        raise ValueError(f"delta (the error probability) must lie in (0, 1); got {delta!r}")
    return max(0.0, math.log(1.0 / (2.4 * delta)))


def lower_bound(X, theta, delta: float, **kwargs) -> float:
    """LB = T*(theta) log(1 / (2.4 delta)): no delta-correct algorithm needs fewer tests in expectation.
    ``kwargs`` as for :func:`characteristic_time`."""
    factor = log_factor(delta)
    return characteristic_time(X, theta, **kwargs).T_star * factor

