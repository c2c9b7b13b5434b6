"""The characteristic time T*(theta) and optimal allocation (screenbai.bandits.certainty.complexity)
against closed forms (../shared/spec/LOWER_BOUND.md), brute force and an independent solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits.certainty import allocation_time, characteristic_time, lower_bound
from screenbai.bandits.sim.generators import reda_classic, soare


def _brute_T(X, theta, W, sigma=1.0, epsilon=0.0):
    """T(w) of the best arm for many allocations at once (rows of W), written out independently:
    2 sigma^2 max_j (x_i - x_j)' A(w)^-1 (x_i - x_j) / (theta'(x_i - x_j) + epsilon)^2."""
    mu = X @ theta
    i = int(np.argmax(mu))
    A = np.einsum("nk,ka,kb->nab", W, X, X)
    Ainv = np.linalg.inv(A)
    out = np.zeros(W.shape[0])
    for j in range(X.shape[0]):
        if j == i:
            continue
        y = X[i] - X[j]
        out = np.maximum(out, np.einsum("a,nab,b->n", y, Ainv, y) / (mu[i] - mu[j] + epsilon) ** 2)
    return 2 * sigma**2 * out


@pytest.mark.parametrize("delta_gap", [1.0, 0.3, 0.05])
def test_two_arms_closed_form(delta_gap):
    # LOWER_BOUND.md: x_1 = e_1, x_2 = e_2, theta = (Delta, 0), sigma = 1: T* = 8 / Delta^2, half the tests each
    c = characteristic_time(np.eye(2), [delta_gap, 0.0])
    assert c.T_star == pytest.approx(8.0 / delta_gap**2, rel=1e-3)
    np.testing.assert_allclose(c.allocation, [0.5, 0.5], atol=2e-2)
    assert c.answer == (0,) and c.model == "linear"
    assert c.lower <= c.T_star <= c.lower * (1 + 1e-3)


@pytest.mark.parametrize("K", [3, 5, 10])
def test_orthogonal_arms_equal_gaps(K):
    # arms e_1..e_K, theta = Delta e_1: by symmetry w_1 = 1 / (1 + sqrt(K - 1)), the others share the rest,
    # T* = 2 sigma^2 (1 + sqrt(K - 1))^2 / Delta^2
    sigma, gap = 0.7, 0.4
    c = characteristic_time(np.eye(K), np.r_[gap, np.zeros(K - 1)], sigma=sigma)
    assert c.T_star == pytest.approx(2 * sigma**2 * (1 + math.sqrt(K - 1)) ** 2 / gap**2, rel=1e-3)
    assert c.allocation[0] == pytest.approx(1 / (1 + math.sqrt(K - 1)), abs=1e-2)
    np.testing.assert_allclose(c.allocation[1:], (1 - c.allocation[0]) / (K - 1), atol=1e-2)


def test_brute_force_grid_three_arms():
    inst = soare(d=2, omega=0.3)
    X, theta = inst.features, inst.theta
    c = characteristic_time(X, theta)
    g = np.linspace(0.002, 0.996, 400)
    a, b = np.meshgrid(g, g)
    W = np.column_stack([a.ravel(), b.ravel(), 1 - a.ravel() - b.ravel()])
    W = W[W[:, 2] > 1e-3]
    brute = _brute_T(X, theta, W)
    # the grid's best is never below T* (T* is the minimum) and T* is at most the grid's best
    assert brute.min() >= c.T_star * (1 - 1e-9)
    assert c.T_star <= brute.min() * (1 + 1e-3)
    assert c.T_star == pytest.approx(brute.min(), rel=5e-3)
    assert allocation_time(X, theta, c.allocation) == pytest.approx(c.T_star, rel=1e-9)
    assert _brute_T(X, theta, c.allocation[None])[0] == pytest.approx(c.T_star, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_optimality_against_an_independent_solver(seed):
    # an epigraph formulation solved by SLSQP (min t s.t. T_j(w) <= t) on small random instances
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    K, d = 7, 3
    X = rng.uniform(-1, 1, (K, d))
    theta = rng.standard_normal(d)
    c = characteristic_time(X, theta, sigma=0.5, tol=1e-4)
    mu = X @ theta
    i = int(np.argmax(mu))
    Ys = [(X[i] - X[j], mu[i] - mu[j]) for j in range(K) if j != i]

    def tj(z):
        A = (X.T * z[:K]) @ X
        return np.array([2 * 0.25 * y @ np.linalg.solve(A, y) / g**2 for y, g in Ys])

    best = math.inf
    for start in range(6):
        w0 = np.full(K, 1 / K) if start == 0 else rng.dirichlet(np.ones(K))
        z0 = np.r_[w0, tj(np.r_[w0, 0]).max()]
        res = minimize(
            lambda z: z[K], z0, method="SLSQP",
            constraints=[{"type": "eq", "fun": lambda z: z[:K].sum() - 1},
                         {"type": "ineq", "fun": lambda z: z[K] - tj(z)}],
            bounds=[(1e-6, 1)] * K + [(0, None)], options={"maxiter": 500, "ftol": 1e-12},
        )
        if res.success:
            best = min(best, float(tj(res.x).max()))
    assert c.T_star <= best * (1 + 1e-3)
    assert c.T_star >= best * (1 - 1e-3)
    # the certificate is a true lower bound: no random allocation beats it
    W = rng.dirichlet(np.ones(K), size=2000)
    assert _brute_T(X, theta, W, sigma=0.5).min() >= c.lower * (1 - 1e-9)
    assert c.lower <= c.T_star <= c.lower * (1 + 1e-4)


def test_duality_gap_on_a_large_random_instance():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (400, 20))
    theta = rng.standard_normal(20)
    c = characteristic_time(X, theta, sigma=0.5)
    assert c.lower <= c.T_star <= c.lower * (1 + 1e-3)
    assert allocation_time(X, theta, c.allocation, sigma=0.5) == pytest.approx(c.T_star, rel=1e-9)
    uniform = allocation_time(X, theta, np.ones(400), sigma=0.5)
    assert uniform > c.T_star
    # a warm start from the answer converges to the same value
    c2 = characteristic_time(X, theta, sigma=0.5, w0=c.allocation)
    assert c2.T_star == pytest.approx(c.T_star, rel=2e-3)


def test_top_m_orthogonal_closed_form():
    # arms e_1..e_4, theta = (1, 1, 0, 0), m = 2: four pairs (i in {1,2}, j in {3,4}) with ||y||^2 = 1/w_i + 1/w_j,
    # gap 1 + epsilon; by symmetry w = 1/4: T* = 2 sigma^2 * 8 / (1 + epsilon)^2
    for eps in (0.0, 0.5):
        c = characteristic_time(np.eye(4), [1.0, 1.0, 0.0, 0.0], m=2, epsilon=eps)
        assert c.answer == (0, 1)
        assert c.T_star == pytest.approx(16.0 / (1 + eps) ** 2, rel=1e-3)
        np.testing.assert_allclose(c.allocation, 0.25, atol=1e-2)


def test_top_m_reda_instance_is_finite_and_consistent():
    inst = reda_classic(K=4, m=2)
    c = characteristic_time(inst.features, inst.theta, sigma=inst.sigma, m=2)
    assert c.answer == tuple(inst.best_arms(2).tolist())
    assert np.isfinite(c.T_star) and c.T_star > 0
    # a top-m problem is at least as hard as telling its m-th best from its (m+1)-th best alone
    X, th = inst.features, inst.theta
    ans = list(c.answer)
    pair = characteristic_time(X, th, sigma=inst.sigma, m=2, answer=ans)
    assert pair.T_star == pytest.approx(c.T_star, rel=1e-9)
    assert allocation_time(X, th, np.ones(4), sigma=inst.sigma, m=2) >= c.T_star


def test_epsilon_good_linear():
    # two arms, gap Delta: with epsilon the best arm's gap becomes Delta + epsilon (LOWER_BOUND.md), and
    # once epsilon > Delta the second arm is a correct answer too (gap epsilon - Delta, a harder one)
    gap = 0.5
    values = []
    for eps in (0.0, 0.2, 0.6, 1.5):
        c = characteristic_time(np.eye(2), [gap, 0.0], epsilon=eps)
        assert c.answer == (0,)
        assert c.T_star == pytest.approx(8.0 / (gap + eps) ** 2, rel=1e-3)
        values.append(c.T_star)
    assert np.all(np.diff(values) < 0)
    # the maximum over the epsilon-good answers: the reported answer attains the smallest T* among them
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (12, 3))
    theta = rng.standard_normal(3)
    eps = 0.5
    c = characteristic_time(X, theta, epsilon=eps)
    mu = X @ theta
    good = np.flatnonzero(mu >= mu.max() - eps)
    per = [characteristic_time(X, theta, epsilon=eps, answer=[i]).T_star for i in good]
    assert c.T_star == pytest.approx(min(per), rel=1e-9)
    assert c.answer == (int(good[int(np.argmin(per))]),)


def test_ties_give_infinite_time_and_epsilon_resolves_them():
    X = np.eye(3)
    theta = np.array([1.0, 1.0, 0.0])
    assert characteristic_time(X, theta).T_star == math.inf
    assert math.isfinite(characteristic_time(X, theta, epsilon=0.1).T_star)
    assert lower_bound(X, theta, 0.05) == math.inf


def test_rank_deficient_features_and_scaling():
    # arms in a plane of R^3: the same as the planar instance; T* scales as sigma^2 and 1/theta^2
    rng = np.random.default_rng(0)
    X2 = rng.uniform(-1, 1, (8, 2))
    th2 = rng.standard_normal(2)
    X3 = np.column_stack([X2, np.zeros(8)])
    a = characteristic_time(X2, th2)
    b = characteristic_time(X3, np.r_[th2, 5.0])
    assert b.T_star == pytest.approx(a.T_star, rel=2e-3)
    c = characteristic_time(X2, 2 * th2, sigma=3.0)
    assert c.T_star == pytest.approx(a.T_star * 9 / 4, rel=2e-3)


def test_logistic_local_form_reduces_to_linear_reweighting():
    # two arms e_1, e_2 with eta = (s, -s): mu'_1 = mu'_2 = mu', y = (mu', -mu'), H(w) = diag(w mu'), so
    # ||y||^2_{H^-1} = mu' / w_1 + mu' / w_2, minimised at w = 1/2 by symmetry: T* = 2 * 4 mu' / (mu_1 - mu_2)^2
    s = 0.3
    X = np.eye(2)
    theta = np.array([s, -s])
    c = characteristic_time(X, theta, model="logistic")
    from scipy.special import expit

    mu, slope = expit([s, -s]), expit([s, -s]) * expit([-s, s])
    # y = (mu'_1, -mu'_2), H = diag(w mu'): ||y||^2_{H^-1} = mu'_1 / w_1 + mu'_2 / w_2 = 2 mu' / (1/2) at w = 1/2
    expect = 2 * (slope[0] / 0.5 + slope[1] / 0.5) / (mu[0] - mu[1]) ** 2
    assert c.T_star == pytest.approx(expect, rel=1e-3)
    assert c.model == "logistic"


def test_lower_bound_formula_and_bad_input():
    c = characteristic_time(np.eye(2), [1.0, 0.0])
    assert lower_bound(np.eye(2), [1.0, 0.0], 0.05) == pytest.approx(c.T_star * math.log(1 / (2.4 * 0.05)))
    assert lower_bound(np.eye(2), [1.0, 0.0], 0.5) == 0.0
    with pytest.raises(ValueError, match="delta"):
        lower_bound(np.eye(2), [1.0, 0.0], 0.0)
    with pytest.raises(ValueError, match="theta has 3 entries"):
        characteristic_time(np.eye(2), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="model must be one of"):
        characteristic_time(np.eye(2), [1.0, 0.0], model="probit")
    with pytest.raises(ValueError, match="m .* must be a whole number"):
        characteristic_time(np.eye(2), [1.0, 0.0], m=2)
    with pytest.raises(ValueError, match="epsilon"):
        characteristic_time(np.eye(2), [1.0, 0.0], epsilon=-0.1)
    with pytest.raises(ValueError, match="answer must be 1 distinct"):
        characteristic_time(np.eye(2), [1.0, 0.0], answer=[5])
    with pytest.raises(ValueError, match="w must hold 2"):
        allocation_time(np.eye(2), [1.0, 0.0], [1.0])
    # an allocation that misses a direction the answer needs: no finite time
    assert allocation_time(np.eye(2), [1.0, 0.0], [1.0, 0.0]) == math.inf


def test_exact_logistic_pair_infimum_against_a_grid():
    # d = 2: the constrained infimum of sum_k w_k kl(mu_k(theta), mu_k(lambda)) over a fine grid of lambda
    from scipy.special import expit

    from screenbai.bandits.certainty.exact_logistic import _kl_terms, pair_infimum
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=6, d=2, seed=0)
    X, theta = inst.features, inst.theta
    w = np.random.default_rng(0).dirichlet(np.ones(6))
    i = int(np.argmax(X @ theta))
    for j in [k for k in range(6) if k != i][:3]:
        val, lam = pair_infimum(X, theta, w, i, j, 0.1)
        assert expit(X[j] @ lam) - expit(X[i] @ lam) >= 0.1 - 1e-7
        g = np.linspace(-8, 8, 401)
        L = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
        eta = L @ X.T
        ok = expit(eta[:, j]) - expit(eta[:, i]) >= 0.1
        objective = _kl_terms(X @ theta, eta) @ w
        grid = objective[ok].min()
        assert val <= grid + 1e-9  # never worse than the coarse grid: SLSQP found the best basin
        # a fine grid around the coarse grid's best point comes within 1 % of it (it is a minimum)
        centre = L[ok][np.argmin(objective[ok])]
        f = np.linspace(-0.06, 0.06, 241)
        L2 = centre + np.stack(np.meshgrid(f, f), -1).reshape(-1, 2)
        eta2 = L2 @ X.T
        ok2 = expit(eta2[:, j]) - expit(eta2[:, i]) >= 0.1
        fine = (_kl_terms(X @ theta, eta2) @ w)[ok2].min()
        assert val <= fine + 1e-12
        assert val >= fine * (1 - 0.01)


def test_exact_logistic_pair_infimum_above_one_minus_epsilon_against_a_grid():
    # the answer's mean above 1 - epsilon (0.97 > 0.9): every alternative must bring it below 0.9 first; the
    # local form's start lies outside the constraint's domain there (SLSQP from it found no feasible point)
    from scipy.special import expit

    from screenbai.bandits.certainty.exact_logistic import _kl_terms, pair_infimum

    X = np.array([[1.0, 0.2], [0.6, 0.9], [0.3, -0.8], [-0.5, 0.4]])
    theta = np.array([3.2, 0.4])
    mu = expit(X @ theta)
    assert mu[0] > 0.95 and mu.argmax() == 0
    w = np.array([0.4, 0.3, 0.2, 0.1])
    g = np.linspace(-10, 10, 801)
    L = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    eta = L @ X.T
    for j in (1, 2, 3):
        val, lam = pair_infimum(X, theta, w, 0, j, 0.1)
        assert expit(X[j] @ lam) - expit(X[0] @ lam) >= 0.1 - 1e-7
        ok = expit(eta[:, j]) - expit(eta[:, 0]) >= 0.1
        grid = (_kl_terms(X @ theta, eta) @ w)[ok].min()
        assert grid * (1 - 0.02) <= val <= grid + 1e-9


def test_exact_logistic_batched_pairs_agree_with_slsqp_pair_by_pair():
    # the batched KKT Newton against scipy's SLSQP on each pair alone (an independent solver, started near the
    # answer); d = 4, every pair of the best arm, a random allocation: both minimise the same convex problem
    from scipy.optimize import minimize
    from scipy.special import expit

    from screenbai.bandits.certainty.exact_logistic import _kl_terms, pair_infima

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(12, 4))
    theta = rng.normal(size=4) * 1.5
    w = rng.dirichlet(np.ones(12))
    eta_star = X @ theta
    i = int(np.argmax(eta_star))
    pairs = np.array([[i, j] for j in range(12) if j != i])
    vals, lams, converged = pair_infima(X, theta, w, pairs, 0.05)
    assert converged.all()
    for (a, b), v, lam in zip(pairs, vals, lams):
        res = minimize(
            lambda z: float(w @ _kl_terms(eta_star, X @ z)), lam + 0.3 * rng.normal(size=4), method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda z, a=a, b=b: expit(X[b] @ z) - expit(X[a] @ z) - 0.05}],
            options={"maxiter": 500, "ftol": 1e-14},
        )
        assert expit(X[b] @ res.x) - expit(X[a] @ res.x) >= 0.05 - 1e-7
        assert v == pytest.approx(res.fun, rel=1e-4, abs=1e-9)
        assert v <= res.fun + 1e-9  # never above what SLSQP finds: the global minimum of the convex problem


@pytest.mark.parametrize("seed", [0, 1])
def test_logistic_local_form_against_the_exact_bound_d2(seed):
    # LOWER_BOUND.md: validate the local Fisher form against the exact Bernoulli-KL bound at d = 2
    # (docs/lower_bound.md reports both on kw_synthetic d = 2). Measured: within 1 % on these seeds.
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=6, d=2, seed=seed)
    local = characteristic_time(inst.features, inst.theta, model="logistic", epsilon=0.1)
    exact = characteristic_time(inst.features, inst.theta, model="logistic", epsilon=0.1, exact=True, tol=1e-2)
    assert exact.exact and not local.exact
    assert exact.lower <= exact.T_star <= exact.lower * 1.01 + 1e-12
    assert exact.T_star == pytest.approx(local.T_star, rel=0.02)
    with pytest.raises(ValueError, match="exact=True is for the logistic model"):
        characteristic_time(inst.features, inst.theta, exact=True)


@pytest.mark.slow
def test_exact_allocation_time_is_the_bound_at_w_star_and_above_it_elsewhere():
    # T_ex(w) (the exact sampling factor's numerator, benchmarks/lower_bound.py): at the exact w* it is T*, at
    # any other allocation at least T* (up to the solver's tolerance), and it tells where the local form's w*
    # loses under the exact KL (kw d = 5 seed 2, top mean 0.964: docs/lower_bound.md measured 66.0 = 4.7 T*)
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=50, d=5, seed=2)
    X, theta, kw = inst.features, inst.theta, {"model": "logistic", "epsilon": 0.1}
    exact = characteristic_time(X, theta, exact=True, tol=1e-2, **kw)
    assert allocation_time(X, theta, exact.allocation, exact=True, answer=exact.answer, **kw) == pytest.approx(
        exact.T_star, rel=1e-6)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.integers(0, 5, size=50).astype(float)
        assert allocation_time(X, theta, w, exact=True, **kw) >= exact.lower * (1 - 1e-6)
    local = characteristic_time(X, theta, **kw)
    assert allocation_time(X, theta, local.allocation, exact=True, **kw) > 3 * exact.T_star
    only_three = np.r_[np.ones(3), np.zeros(47)]  # three arms cannot tell the five directions apart
    assert allocation_time(X, theta, only_three, exact=True, **kw) == math.inf
    with pytest.raises(ValueError, match="exact=True is for the logistic model"):
        allocation_time(X, theta, np.ones(50), exact=True)
    big = np.random.default_rng(1).normal(size=(300, 3))
    with pytest.raises(ValueError, match="allows at most 200 pairs; this answer has 299"):
        allocation_time(big, np.array([1.0, 0.0, 0.0]), np.ones(300), model="logistic", exact=True)


def test_exact_allocation_time_solves_a_pair_where_newton_stalls():
    # a log-tas run's counts on kw d = 10 seed 2 (383 tests, 18 arms never tested): Newton's iteration stalls on
    # the pair (9, 27) of the best answer, infeasible, at a value of 12.5; SLSQP from there (the constraint on
    # the means) finishes it, and T_ex is finite and no larger than the best answer's other pairs allow
    from screenbai.bandits.certainty.exact_logistic import pair_infima
    from screenbai.bandits.certainty.local_form import _Model, _Pairs
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=50, d=10, seed=2)
    X, theta = inst.features, inst.theta
    counts = np.array([0, 0, 1, 7, 0, 2, 5, 5, 2, 205, 7, 0, 20, 1, 3, 5, 0, 0, 0, 1, 15, 0, 0, 0, 0, 9, 0, 0, 0,
                       1, 0, 2, 5, 0, 1, 6, 6, 5, 8, 12, 8, 3, 10, 8, 1, 0, 0, 2, 5, 12], dtype=float)
    w = counts / counts.sum()
    pairs = _Pairs(_Model(X, theta, "logistic", 1.0), 0.1, (9,)).pairs
    vals, _, converged = pair_infima(X, theta, w, pairs, 0.1)
    assert not converged.all()  # the case this test is about (if the solver improves, pick another one)
    T = allocation_time(X, theta, counts, model="logistic", epsilon=0.1, exact=True, answer=(9,))
    assert math.isfinite(T)
    assert T == pytest.approx(1.0 / vals[converged].min(), rel=1e-9)  # the stalled pair does not bind here


def test_random_linear_instance_is_named_and_reproducible():
    from screenbai.bandits.sim.generators import parse_instance, random_linear

    a = parse_instance("random_linear:K=30,d=4,sigma=0.5,seed=3")
    b = random_linear(K=30, d=4, sigma=0.5, seed=3)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.features.shape == (30, 4) and a.sigma == 0.5 and a.reward == "gaussian"
    assert np.abs(a.features).max() <= 1.0
    np.testing.assert_allclose(a.means, a.features @ a.theta)
    assert not np.array_equal(random_linear(K=30, d=4, seed=4).theta, a.theta)


def test_exact_allocation_time_restarts_slsqp_from_theta_where_it_gives_up_at_the_stall():
    # a log-tas run's counts on kw d = 2 seed 1 (replication 208 of the benchmark, 184 tests on 6 arms): Newton
    # stalls on the pair (33, 24) of the best answer, and SLSQP from the stall stops short of its own tolerance
    # (at the right value, 0.239); from theta it converges. The value is checked against a grid over lambda.
    from scipy.special import expit

    from screenbai.bandits.certainty.exact_logistic import _kl_terms, _slsqp_pair, pair_infima
    from screenbai.bandits.certainty.local_form import _Model, _Pairs
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=50, d=2, seed=1)
    X, theta = inst.features, inst.theta
    counts = np.zeros(50)
    counts[[0, 11, 13, 17, 29, 33]] = [30, 78, 12, 53, 1, 10]
    w = counts / counts.sum()
    pairs = _Pairs(_Model(X, theta, "logistic", 1.0), 0.1, (33,)).pairs
    _, lams, converged = pair_infima(X, theta, w, pairs, 0.1)  # all of the answer's pairs at once, as T_ex does
    (p,) = np.flatnonzero((pairs[:, 0] == 33) & (pairs[:, 1] == 24))
    assert np.flatnonzero(~converged).tolist() == [p]  # the case this test is about (if the solver improves,
    assert not _slsqp_pair(X, theta, w, 33, 24, 0.1, lams[p])[1]  # pick another one)
    value, ok = _slsqp_pair(X, theta, w, 33, 24, 0.1, theta)
    assert ok
    g = np.linspace(-6.0, 6.0, 1201)
    L = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    feasible = expit(L @ X[24]) - expit(L @ X[33]) >= 0.1
    seen = w > 0  # the arms tested: the others add nothing to the weighted KL
    grid = float(np.min(_kl_terms(X[seen] @ theta, L[feasible] @ X[seen].T) @ w[seen]))
    assert value == pytest.approx(grid, rel=2e-2) and value <= grid + 1e-9
    T = allocation_time(X, theta, counts, model="logistic", epsilon=0.1, exact=True, answer=(33,))
    assert math.isfinite(T) and T >= 1.0 / value - 1e-9


def test_exact_logistic_pairs_outside_the_domain_raise_no_numpy_warnings():
    """epsilon = 0 and a leader whose hit rate rounds to 1: the constraint's boundary is inf there, the pairs stay
    unconverged at their start (as before), and numpy's divide/invalid warnings no longer reach the console
    (`screenbai simulate log-tas`, epsilon 0 by default, printed dozens of 'warning: divide by zero encountered in
    log1p' / 'invalid value encountered in logaddexp')."""
    import warnings

    from screenbai.bandits.certainty.exact_logistic import pair_infima

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        vals, _, converged = pair_infima(X, np.array([45.0, 1.0]), np.ones(3) / 3, np.array([[2, 0], [2, 1]]), 0.0)
    np.testing.assert_allclose(vals, [0.0, 0.04805505], atol=1e-8)
    assert not converged.any()


def test_the_exact_bound_s_boundary_far_out_warns_nothing():
    """`status` on a log-tas campaign at epsilon = 0 printed numpy's "divide by zero encountered in log1p" (a trial
    step of the exact bound's pair solve where mu(u) rounds to 1): the values are inf / nan, which the step's merit
    refuses, and no warning reaches the terminal."""
    import warnings

    from screenbai.bandits.certainty.exact_logistic import _boundary

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h, h1, h2 = _boundary(np.array([0.0, 40.0, -800.0]), 0.0)
    assert h[0] == pytest.approx(0.0) and h1[0] == pytest.approx(1.0) and not np.isfinite(h[1])


def test_a_logistic_theta_beyond_floating_point_is_named_not_a_linalg_error():
    # |x'theta| = 1000: mu' is 0.0 in floating point and the Fisher information singular; the lower-bound tool
    # (and the forecast built on it) died in scipy's cho_factor ("1-th leading minor ... not positive definite")
    with pytest.raises(ValueError, match=r"arm 0 x'theta = 1000 .*smaller norm"):
        characteristic_time(np.eye(3), [1e3, 0.0, 0.0], model="logistic")
    assert np.isfinite(characteristic_time(np.eye(3), [40.0, -40.0, 0.0], model="logistic").T_star)  # 30+ is fine
