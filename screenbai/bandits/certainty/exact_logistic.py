"""The exact logistic lower bound on small instances: the Bernoulli KL and the constraint on the means
themselves, no linearisation (LOWER_BOUND.md: "validate [the local form] against the exact infimum
(a small constrained minimisation) on d = 2 instances and report both").

    1 / T*(theta) = max_w min_{pairs (i, j)} inf_{lambda : mu(x_j'lambda) - mu(x_i'lambda) >= epsilon}
                    sum_k w_k kl(mu(x_k'theta), mu(x_k'lambda))

- inner infimum, one pair: the objective is convex in lambda (sum_k w_k [log(1 + e^eta_k) - mu_k eta_k] +
  const, eta = X lambda), and so is the alternative, written x_j'lambda >= h(x_i'lambda) with
  h(u) = logit(mu(u) + epsilon) convex and increasing where mu(u) < 1 - epsilon. The problem is convex:
  SQP (Newton's method on its KKT conditions, globalised on the l1 merit), batched over all pairs and
  started from the local form's minimiser (``pair_infima``), finds the global minimum: a few milliseconds
  for 50 pairs at d = 10, where one SLSQP start per pair took a second and missed the minimum by orders
  of magnitude when mu_i > 1 - epsilon (the local form's start lies outside the constraint's domain there);
- outer maximum: val(w) = min_p inf_p(w) is concave (a minimum of functions linear in w). Kelley's
  cutting planes: every minimiser lambda found gives val(w') <= sum_k w'_k kl_k(theta, lambda) for all w',
  an LP over these cuts bounds max_w val from above, each evaluated w bounds it from below; stop when
  the two agree within ``tol``. An allocation at which some pair did not converge is never taken as the
  best (its value could be too large); only converged minimisers become cuts.

log-tas tracks this allocation at its estimate (tracking/logistic.py, ``_allocation``), with few cutting-plane
steps and looser pair solves (``strict=False``): there an approximate w* only costs tests.
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

#: pairs above this many times the smallest converged value stop iterating (``_value``, strict=False)
PRUNE = 3.0
#: step halvings before a pair's iteration gives up (a step of 2^-20 that still does not lower the merit)
HALVINGS = 20
#: Newton steps per pair when the exact allocation is a sampling rule's target (``_value``, strict=False)
STRICT_OFF_ITERS = 25


def _kl_terms(eta_star: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """kl(mu(eta*_k), mu(eta_k)) for every arm, computed as [softplus(eta) - p eta] - [softplus(eta*) - p eta*]."""
    p = expit(eta_star)
    return (np.logaddexp(0.0, eta) - p * eta) - (np.logaddexp(0.0, eta_star) - p * eta_star)


def _boundary(u, epsilon):
    """h(u) = logit(mu(u) + epsilon) and its first two derivatives: the alternative of pair (i, j) is the
    convex set {lambda : x_j'lambda >= h(x_i'lambda)} (h is convex and increasing on mu(u) < 1 - epsilon)."""
    s = expit(u)
    q = s + epsilon
    a = s * (1.0 - s)
    b = q * (1.0 - q)
    # outside the domain (q rounds to 0 or 1: a trial step too long, or epsilon = 0 with mu(u) = 1 in floating
    # point) h is +-inf or nan: a trial step is then refused (np.isfinite) and a start leaves its pair unconverged
    # (pair_infima); numpy's warnings about it would only reach the user's console as noise
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h = np.log(q) - np.log1p(-q)
        h1 = a / b
        h2 = a * ((1.0 - 2.0 * s) * b - (1.0 - 2.0 * q) * a) / (b * b)
    return h, h1, h2


def pair_infima(X, theta, w, pairs, epsilon, iters: int = 2_000, tol: float = 1e-10,
                prune: float | None = None):
    """inf over {lambda : mu(x_j'lambda) - mu(x_i'lambda) >= epsilon} of sum_k w_k kl(mu_k(theta), mu_k(lambda)),
    for every pair (i, j) at once: Newton's method on the KKT conditions of the convex problem

        min f(lambda) = sum_k w_k [softplus(x_k'lambda) - mu_k x_k'lambda]   s.t.   x_j'lambda - h(x_i'lambda) = 0,

    (the constraint is active at the minimiser: theta is outside the alternative), batched over the pairs
    and started from the local form's minimiser (moved inside mu(x_i'lambda) < 1 - epsilon where it is not),
    each step shortened to stay there and halved until the l1 merit f + rho |c| falls (SQP's globalisation).
    Most pairs converge in under ten steps; a pair whose weighted arms barely see the direction it needs can
    take hundreds, and only the pairs not yet converged iterate. ``prune``: a pair still iterating whose value
    is above this many times the smallest converged one is left where it is (a heuristic for a sampling
    rule's target: such pairs do not set the minimum over pairs). Returns (values, minimisers, converged):
    converged is False for a pair whose KKT residual is still above ``tol`` when it stops (its value may then
    be too large)."""
    X = np.asarray(X, dtype=float)
    K, d = X.shape
    P = pairs.shape[0]
    ii, jj = pairs[:, 0], pairs[:, 1]
    eta_star = X @ theta
    p = expit(eta_star)
    slope = dmu(eta_star)
    H0 = (X.T * (w * slope)) @ X
    ridge = 1e-9 * max(float(np.trace(H0)) / d, 1e-12) * np.eye(d)
    # the local form's minimiser: theta - H^-1 y g / (y' H^-1 y), y = mu'_i x_i - mu'_j x_j
    Y = slope[ii, None] * X[ii] - slope[jj, None] * X[jj]
    g = p[ii] - p[jj] + epsilon
    S = np.linalg.solve(H0 + ridge, Y.T).T
    lam = theta - S * (g / np.einsum("pd,pd->p", Y, S))[:, None]
    u_max = np.log1p(-epsilon) - np.log(epsilon) if epsilon > 0 else np.inf  # mu(u) < 1 - epsilon
    u_safe = u_max - 0.05 if epsilon > 0 else np.inf
    # a start inside the constraint's domain: move x_i'lambda below u_max along H^-1 x_i
    u = np.einsum("pd,pd->p", X[ii], lam)
    over = u > u_safe
    if over.any():
        Si = np.linalg.solve(H0 + ridge, X[ii[over]].T).T
        lam[over] -= Si * ((u[over] - u_safe) / np.einsum("pd,pd->p", X[ii[over]], Si))[:, None]

    def evaluate(L, a_i, a_j):
        """The objective f, its gradient, the constraint c and its gradient, and the Newton system's pieces."""
        eta = L @ X.T  # pairs x K
        mu = expit(eta)
        f = _kl_terms(eta_star, eta) @ w
        grad = (w * (mu - p)) @ X
        u = np.einsum("pd,pd->p", X[a_i], L)
        h, h1, h2 = _boundary(u, epsilon)
        gc = X[a_j] - h1[:, None] * X[a_i]
        c = np.einsum("pd,pd->p", X[a_j], L) - h
        return f, grad, gc, c, mu, u, h2

    def vals_of(L):
        return _kl_terms(eta_star, L @ X.T) @ w

    converged = np.zeros(P, dtype=bool)
    stuck = np.zeros(P, dtype=bool)
    f, grad, gc, c, mu, u, h2 = evaluate(lam, ii, jj)
    # the multiplier that best explains the start's gradient; rho, the l1 merit's weight on the constraint
    nu = np.maximum(np.einsum("pd,pd->p", grad, gc) / np.einsum("pd,pd->p", gc, gc), 0.0)
    rho = np.zeros(P)
    act = np.arange(P)  # the pairs still iterating
    low = math.inf
    for _ in range(iters):
        r = grad - nu[act, None] * gc
        done = np.maximum(np.abs(r).max(axis=1), np.abs(c)) < tol
        converged[act[done]] = True
        if done.any():
            low = min(low, float(f[done].min()))  # the smallest converged value
        if prune is not None:
            stuck[act[f > prune * low]] = True
        keep = ~done & ~stuck[act]
        if not keep.any():
            break
        act, f, grad, gc, c, mu, u, h2 = (a[keep] for a in (act, f, grad, gc, c, mu, u, h2))
        a_i, a_j, n_act = ii[act], jj[act], act.size
        # the SQP step: Newton on the KKT conditions (the Lagrangian's Hessian is positive definite: f is
        # convex and -c too, with nu >= 0)
        KKT = np.zeros((n_act, d + 1, d + 1))
        KKT[:, :d, :d] = np.einsum("pk,kd,ke->pde", w * mu * (1.0 - mu), X, X) + ridge
        KKT[:, :d, :d] += (nu[act] * h2)[:, None, None] * np.einsum("pd,pe->pde", X[a_i], X[a_i])
        KKT[:, :d, d] = -gc
        KKT[:, d, :d] = -gc
        rhs = np.concatenate([-grad, c[:, None]], axis=1)[..., None]
        try:
            step = np.linalg.solve(KKT, rhs)[..., 0]
        except np.linalg.LinAlgError:  # a direction no arm informs and the constraint ignores
            step = (np.linalg.pinv(KKT) @ rhs)[..., 0]
        dlam, nu_new = step[:, :d], np.maximum(step[:, d], 0.0)
        # globalised on the l1 merit f + rho |c| (rho above the new multiplier: the step is a descent
        # direction), the step first shortened to stay in the constraint's domain, then halved
        rho[act] = np.maximum(rho[act], 1.5 * nu_new + 1e-12)
        slope = np.einsum("pd,pd->p", grad, dlam) - rho[act] * np.abs(c)
        merit = f + rho[act] * np.abs(c)
        du = np.einsum("pd,pd->p", X[a_i], dlam)
        t = np.ones(n_act)
        up = du > 0
        t[up] = np.minimum(1.0, 0.9 * (u_max - u[up]) / du[up])
        L0, nu0 = lam[act], nu[act]
        todo = np.arange(n_act)
        for _ in range(HALVINGS):
            L_try = L0[todo] + t[todo, None] * dlam[todo]
            with np.errstate(invalid="ignore"):  # a pair left unconverged at its start steps by nan: refused below
                f_t, g_t, gc_t, c_t, mu_t, u_t, h2_t = evaluate(L_try, a_i[todo], a_j[todo])
            m_t = f_t + rho[act[todo]] * np.abs(c_t)
            ok = np.isfinite(m_t) & (m_t <= merit[todo] + 1e-4 * t[todo] * np.minimum(slope[todo], 0.0))
            sel = todo[ok]
            lam[act[sel]] = L_try[ok]
            nu[act[sel]] = nu0[sel] + t[sel] * (nu_new[sel] - nu0[sel])
            f[sel], grad[sel], gc[sel], c[sel], mu[sel], u[sel], h2[sel] = (
                f_t[ok], g_t[ok], gc_t[ok], c_t[ok], mu_t[ok], u_t[ok], h2_t[ok])
            todo = todo[~ok]
            if not todo.size:
                break
            t[todo] *= 0.5
        stuck[act[todo]] = True  # no step lowers the merit: left unconverged
    return vals_of(lam), lam, converged


def pair_infimum(X: np.ndarray, theta: np.ndarray, w: np.ndarray, i: int, j: int, epsilon: float):
    """inf over {lambda : mu(x_j'lambda) - mu(x_i'lambda) >= epsilon} of sum_k w_k kl(mu_k(theta), mu_k(lambda)),
    one pair (``pair_infima``). Returns (value, minimiser)."""
    vals, lams, _ = pair_infima(X, theta, w, np.array([[i, j]]), epsilon)
    return float(vals[0]), lams[0]


def _value(X, theta, w, pairs: np.ndarray, epsilon: float, strict: bool = True):
    """val(w) = min over pairs of the exact infimum, or None; and the cuts (every converged pair's minimiser).

    strict (a bound to report): None when a pair did not converge (its value might be too large, and val(w)
    with it), so that w is never taken as the best; else (a sampling rule's target, where an approximate
    allocation only costs tests) Newton gets STRICT_OFF_ITERS steps and a pair's last value counts."""
    if strict:
        vals, lams, converged = pair_infima(X, theta, w, pairs, epsilon)
    else:
        vals, lams, converged = pair_infima(X, theta, w, pairs, epsilon, iters=STRICT_OFF_ITERS, prune=PRUNE)
    val = None if strict and not converged.all() else float(vals.min())
    return val, list(lams[converged])


def _slsqp_pair(X, theta, w, i: int, j: int, epsilon: float, start: np.ndarray) -> tuple[float, bool]:
    """One pair's infimum by SLSQP from ``start``, the constraint on the means (``exact_allocation_time``):
    (value, whether SLSQP converged to a feasible point)."""
    from scipy.optimize import minimize

    eta_star = X @ theta
    res = minimize(
        lambda z: float(w @ _kl_terms(eta_star, X @ z)), start, method="SLSQP",
        jac=lambda z: (w * (expit(X @ z) - expit(eta_star))) @ X,
        constraints=[{"type": "ineq", "fun": lambda z: expit(X[j] @ z) - expit(X[i] @ z) - epsilon}],
        options={"maxiter": 1_000, "ftol": 1e-14},
    )
    feasible = expit(X[j] @ res.x) - expit(X[i] @ res.x) >= epsilon - 1e-9
    return float(res.fun), bool(res.success and feasible)


def _exact_answers(X, theta, epsilon: float, m: int, answer):
    """(answer, its pairs in the local form) for every correct answer (or ``answer``) that theta does not
    contradict; a ValueError where an answer has more than EXACT_MAX_PAIRS pairs (one minimisation each)."""
    mu = expit(X @ theta)
    for a in _answers(mu, epsilon, m, answer):
        local = _Pairs(_Model(X, theta, "logistic", 1.0), epsilon, a)
        if not local.feasible:
            continue
        if local.pairs.shape[0] > EXACT_MAX_PAIRS:
            raise ValueError(
                f"the exact logistic bound solves one constrained minimisation per pair and allows at most "
                f"{EXACT_MAX_PAIRS} pairs; this answer has {local.pairs.shape[0]} (K = {X.shape[0]}, m = {m}). Use the "
                "local form (exact=False) on large instances"
            )
        yield a, local


def exact_allocation_time(X, theta, w, *, epsilon: float = 0.0, m: int = 1, answer=None) -> float:
    """T_ex(w) = 1 / min over pairs of the exact infimum at allocation w (normalised), the smallest over the
    correct answers (``answer``: that one only): the exact form of ``complexity.allocation_time``, what a
    run sampling in proportions w needs per unit of log(1/delta) under the Bernoulli KL. inf where some pair
    costs nothing (a direction no weighted arm sees). A pair whose Newton iteration stalls (arms left at weight
    0 can leave its step no descent on the merit) is solved again by SLSQP from where it stopped, with the
    constraint written on the means, mu(x_j'lambda) - mu(x_i'lambda) >= epsilon (the same convex set, and no
    domain to leave: any KKT point is the global minimum), and if SLSQP gives up there, from theta itself; nan
    if that fails too. A benchmark's measure, not a hot path."""
    X = np.asarray(X, dtype=float)
    theta = np.asarray(theta, dtype=float).reshape(-1)
    w = np.asarray(w, dtype=float) / float(np.sum(w))
    times = []
    for _, local in _exact_answers(X, theta, epsilon, m, answer):
        if not math.isfinite(local.time(w)):  # the local form already sees a direction left free
            times.append(math.inf)
            continue
        vals, lams, converged = pair_infima(X, theta, w, local.pairs, epsilon)
        for p in np.flatnonzero(~converged):
            i, j = (int(a) for a in local.pairs[p])
            for start in (lams[p], theta):  # theta: outside the alternative, where SLSQP from the stall gave up
                vals[p], converged[p] = _slsqp_pair(X, theta, w, i, j, epsilon, start)
                if converged[p]:
                    break
        val = float(vals.min()) if converged.all() else None
        times.append(math.nan if val is None else (1.0 / val if val > 0 else math.inf))
    return math.nan if any(math.isnan(t) for t in times) else min(times, default=math.inf)


def exact_characteristic_time(X, theta, *, epsilon: float = 0.0, m: int = 1, tol: float = 1e-3,
                              answer=None, max_iter: int = 200, strict: bool = True) -> Complexity:
    """T*(theta) of the logistic model with the exact Bernoulli KL (module docstring). T_star is 1 / val
    of the best allocation evaluated (an upper end), ``lower`` 1 / the cutting planes' LP value.
    ``strict=False``: a sampling rule's target, the pair problems solved approximately (``_value``)."""
    from scipy.optimize import linprog

    X = np.asarray(X, dtype=float)
    theta = np.asarray(theta, dtype=float).reshape(-1)
    K = X.shape[0]
    mu = expit(X @ theta)
    best: Complexity | None = None
    for a, local in _exact_answers(X, theta, epsilon, m, answer):
        start = local_characteristic_time(X, theta, mu, model="logistic", sigma=1.0, epsilon=epsilon, m=m, tol=1e-3,
                                          max_iter=2_000, answer=list(a))
        eta_star = X @ theta
        cuts: list[np.ndarray] = []
        w = start.allocation
        best_val, best_w = -math.inf, w
        upper = math.inf
        n_iter = 0
        for n_iter in range(1, max_iter + 1):  # noqa: B007 - the count is reported
            val, lams = _value(X, theta, w, local.pairs, epsilon, strict)
            if val is not None and val > best_val:
                best_val, best_w = val, w
            cuts.extend(_kl_terms(eta_star, X @ lam) for lam in lams)
            if not cuts:  # no feasible point yet (strict=False only): no bound from above
                break
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
            # mixed with a little of the uniform allocation: every arm weighs, so each pair's minimum is
            # attained (an LP vertex often leaves a direction no weighted arm sees, where Newton's iterates
            # run off); val((1 - a) w + a u) >= (1 - a) val(w) (concave, val >= 0) costs at most a of it
            w = (1.0 - 0.1 * tol) * w / w.sum() + 0.1 * tol / K
        if best_val == -math.inf:
            raise RuntimeError("the exact pair infima did not converge at any allocation tried; the exact bound "
                               "cannot be given here (use the local form, exact=False)")
        T = 1.0 / best_val if best_val > 0 else math.inf
        # upper <= 0: the cutting planes already say no allocation gathers evidence (estimated means tied to
        # the last bit, e.g. one-hot compounds with the same outcomes after a first plate): T* is inf
        lower = 1.0 / upper if upper > 0 else math.inf
        if best is None or T < best.T_star:
            best = Complexity(T, best_w, a, "logistic", lower=lower, n_iter=n_iter, exact=True)
    if best is None:
        return Complexity(math.inf, np.full(K, 1.0 / K), _answers(mu, epsilon, m, answer)[0], "logistic", math.inf,
                          exact=True)
    return best
