"""The exact logistic lower bound on small instances: the Bernoulli KL and the constraint on the means
themselves, no linearisation (LOWER_BOUND.md: "validate [the local form] against the exact infimum
(a small constrained minimisation) on d = 2 instances and report both").

    1 / T*(theta) = max_w min_{pairs (i, j)} inf_{lambda : mu(x_j'lambda) - mu(x_i'lambda) >= epsilon}
                    sum_k w_k kl(mu(x_k'theta), mu(x_k'lambda))

- inner infimum, one pair: the objective is convex in lambda (sum_k w_k [log(1 + e^eta_k) - mu_k eta_k] +
  const, eta = X lambda), the constraint is not (a difference of sigmoids), so SLSQP runs from the
  local form's minimiser and from two points further into the alternative, and the smallest feasible
  value is kept (a local minimum missed would make the value too large: the "lower" end below is then
  optimistic, which the d = 2 comparison in docs/lower_bound.md would show);
- outer maximum: val(w) = min_p inf_p(w) is concave (a minimum of functions linear in w). Kelley's
  cutting planes: every minimiser lambda found gives val(w') <= sum_k w'_k kl_k(theta, lambda) for all w',
  an LP over these cuts bounds max_w val from above, each evaluated w bounds it from below; stop when
  the two agree within ``tol``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from screenbai.bandits.certainty.local_form import (
    EXACT_MAX_PAIRS,
    Complexity,
    _answers,
    _Model,
    _Pairs,
    local_characteristic_time,
)
from screenbai.bandits.numerics.glm import dmu


def _kl_terms(eta_star: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """kl(mu(eta*_k), mu(eta_k)) for every arm, computed as [softplus(eta) - p eta] - [softplus(eta*) - p eta*]."""
    p = expit(eta_star)
    return (np.logaddexp(0.0, eta) - p * eta) - (np.logaddexp(0.0, eta_star) - p * eta_star)


def pair_infimum(X: np.ndarray, theta: np.ndarray, w: np.ndarray, i: int, j: int, epsilon: float):
    """inf over {lambda : mu(x_j'lambda) - mu(x_i'lambda) >= epsilon} of sum_k w_k kl(mu_k(theta), mu_k(lambda)).

    Returns (value, minimiser). Several SLSQP starts (module docstring).
    """
    from scipy.optimize import minimize  # here: importing scipy.optimize costs 0.1 s at every start

    eta_star = X @ theta
    p = expit(eta_star)

    def objective(lam):
        eta = X @ lam
        return float(w @ _kl_terms(eta_star, eta)), X.T @ (w * (expit(eta) - p))

    def constraint(lam):
        return float(expit(X[j] @ lam) - expit(X[i] @ lam) - epsilon)

    def constraint_grad(lam):
        return dmu(X[j] @ lam) * X[j] - dmu(X[i] @ lam) * X[i]

    # the local form's minimiser: theta - H^-1 y g / (y' H^-1 y), y = mu'_i x_i - mu'_j x_j, g = mu_i - mu_j + eps
    slope = dmu(eta_star)
    H = (X.T * (w * slope)) @ X + 1e-12 * np.eye(X.shape[1])
    y = slope[i] * X[i] - slope[j] * X[j]
    g = p[i] - p[j] + epsilon
    step = np.linalg.solve(H, y)
    lam0 = theta - step * g / float(y @ step)
    best_val, best_lam = math.inf, lam0
    for scale in (1.0, 1.5, 3.0):
        start = theta + scale * (lam0 - theta)
        res = minimize(
            objective, start, jac=True, method="SLSQP",
            constraints=[{"type": "ineq", "fun": constraint, "jac": constraint_grad}],
            options={"maxiter": 200, "ftol": 1e-12},
        )
        if constraint(res.x) >= -1e-9 and float(res.fun) < best_val:
            best_val, best_lam = float(res.fun), res.x
    return best_val, best_lam


def _value(X, theta, w, pairs: np.ndarray, epsilon: float):
    """val(w) = min over pairs of the exact infimum, and every pair's minimiser (the cuts)."""
    results = [pair_infimum(X, theta, w, int(i), int(j), epsilon) for i, j in pairs]
    vals = np.array([v for v, _ in results])
    return float(vals.min()), [lam for _, lam in results]


def exact_characteristic_time(X, theta, *, epsilon: float = 0.0, m: int = 1, tol: float = 1e-3,
                              answer=None, max_iter: int = 200) -> Complexity:
    """T*(theta) of the logistic model with the exact Bernoulli KL (module docstring). T_star is 1 / val
    of the best allocation evaluated (an upper end), ``lower`` 1 / the cutting planes' LP value."""
    from scipy.optimize import linprog

    X = np.asarray(X, dtype=float)
    theta = np.asarray(theta, dtype=float).reshape(-1)
    K = X.shape[0]
    mu = expit(X @ theta)
    best: Complexity | None = None
    for a in _answers(mu, epsilon, m, answer):
        local = _Pairs(_Model(X, theta, "logistic", 1.0), epsilon, a)
        if not local.feasible:
            continue
        if local.pairs.shape[0] > EXACT_MAX_PAIRS:
            raise ValueError(
                f"the exact logistic bound solves one constrained minimisation per pair and allows at most "
                f"{EXACT_MAX_PAIRS} pairs; this answer has {local.pairs.shape[0]} (K = {K}, m = {m}). Use the "
                "local form (exact=False) on large instances"
            )
        start = local_characteristic_time(X, theta, mu, model="logistic", sigma=1.0, epsilon=epsilon, m=m, tol=1e-3,
                                          max_iter=2_000, answer=list(a))
        eta_star = X @ theta
        cuts: list[np.ndarray] = []
        w = start.allocation
        best_val, best_w = -math.inf, w
        upper = math.inf
        n_iter = 0
        for n_iter in range(1, max_iter + 1):  # noqa: B007 - the count is reported
            val, lams = _value(X, theta, w, local.pairs, epsilon)
            if val > best_val:
                best_val, best_w = val, w
            cuts.extend(_kl_terms(eta_star, X @ lam) for lam in lams)
            # LP: max v s.t. v <= C w (every cut), sum w = 1, w >= 0; variables (w, v)
            C = np.array(cuts)
            res = linprog(
                np.r_[np.zeros(K), -1.0],
                A_ub=np.column_stack([-C, np.ones(len(cuts))]), b_ub=np.zeros(len(cuts)),
                A_eq=np.r_[np.ones(K), 0.0][None, :], b_eq=[1.0],
                bounds=[(0, None)] * K + [(None, None)], method="highs",
            )
            upper = min(upper, float(-res.fun))
            if upper - best_val <= tol * upper:
                break
            w = np.clip(res.x[:K], 0.0, None)
            w /= w.sum()
        T = 1.0 / best_val if best_val > 0 else math.inf
        if best is None or T < best.T_star:
            best = Complexity(T, best_w, a, "logistic", lower=1.0 / upper, n_iter=n_iter, exact=True)
    if best is None:
        return Complexity(math.inf, np.full(K, 1.0 / K), _answers(mu, epsilon, m, answer)[0], "logistic", math.inf,
                          exact=True)
    return best
