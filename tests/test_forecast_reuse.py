"""What a forecast's solves share (certainty/forecast.py, local_form.py): one projection of the features for the
point and the draws, the draws warm-started from the point's solve, the Gram matrix from the arms an allocation
weighs. The figures stay those of independent, tightly solved T* (within the solver's certified tolerance)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits.certainty import characteristic_time, cost_table, forecast
from screenbai.bandits.certainty import local_form as lf
from screenbai.bandits.certainty.complexity import allocation_time
from screenbai.bandits.certainty.forecast import stop_quantiles


def beta(t, delta):
    return math.log((1.0 + math.log(max(t, 1.0))) / delta) + 2.0 * math.log(1.0 + math.log(max(t, 1.0)))


def instance(K=1_500, d=6, seed=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(K), rng.normal(size=(K, d - 1))])
    theta = np.r_[-1.5, rng.normal(0.0, 0.6, d - 1)]
    return X, theta


def counting(monkeypatch, name):
    calls = []
    real = getattr(lf, name)

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lf, name, spy)
    return calls


def test_forecast_projects_the_features_once_and_its_figures_are_the_tight_solves(monkeypatch):
    X, theta = instance()
    answer = (int(np.argmax(X @ theta)),)
    counts = np.zeros(X.shape[0])
    counts[np.random.default_rng(1).choice(X.shape[0], 40, replace=False)] = 3.0
    cov = 0.01 * np.eye(X.shape[1])
    kw = dict(model="logistic", sigma=0.5, epsilon=0.1, m=1, answer=answer)
    svds = counting(monkeypatch, "project_if_deficient")
    f = forecast(
        X, theta, beta, 0.05, source="outcomes", cov=cov, n_draws=4, rng=np.random.default_rng(0), counts=counts, **kw
    )
    # the point, 4 draws and the tests so far (allocation_time): one SVD of the features, not 6
    assert len(svds) == 1
    monkeypatch.undo()
    # each figure is the one of an independent cold solve to a relative gap of 1e-9, within the certified 1e-3
    thetas = np.random.default_rng(0).multivariate_normal(theta, cov, size=4, method="eigh")
    done = counts.sum()
    T0 = characteristic_time(X, theta, tol=1e-9, **kw).T_star
    assert T0 <= f.T_star <= T0 * (1 + 1e-3)
    past = max(allocation_time(X, theta, counts, **kw) / f.T_star, 1.0)
    assert f.past == pytest.approx(past, rel=1e-12)
    for th, value in zip(thetas, f.draws):
        T = characteristic_time(X, th, tol=1e-9, **kw).T_star
        lo, hi = (stop_quantiles([t], [math.inf], beta, 0.05, [0.5], done, past)[0] for t in (T, T * (1 + 1e-3)))
        assert lo * (1 - 1e-6) <= value <= hi * (1 + 1e-6)


def test_a_draw_warm_started_from_the_point_skips_the_spanning_qr_and_most_rounds(monkeypatch):
    X, theta = instance(K=3_000, d=8, seed=5)
    kw = dict(model="logistic", epsilon=0.1, answer=(int(np.argmax(X @ theta)),))
    point = characteristic_time(X, theta, **kw)
    assert point.working is not None and point.working.shape[1] == 2 and point.working.shape[0] >= 1
    near = theta + np.random.default_rng(2).normal(0.0, 0.05, theta.size)
    qrs = counting(monkeypatch, "spanning_arms")
    cold = characteristic_time(X, near, **kw)
    assert len(qrs) == 1
    warm = characteristic_time(X, near, w0=point, **kw)
    assert len(qrs) == 1  # the point's arms span: no pivoted QR of all K arms
    # both certified within tol = 1e-3 of the same optimum; the warm one in fewer interior-point iterations
    assert warm.lower <= cold.T_star * (1 + 1e-9) and cold.lower <= warm.T_star * (1 + 1e-9)
    assert warm.T_star == pytest.approx(cold.T_star, rel=1e-3)
    assert warm.n_iter < 0.8 * cold.n_iter
    # an allocation alone (no working pairs) as before: its leading arms
    plain = characteristic_time(X, near, w0=point.allocation, **kw)
    assert plain.T_star == pytest.approx(cold.T_star, rel=1e-3) and plain.lower <= cold.T_star * (1 + 1e-9)


def test_allocation_time_on_a_sparse_allocation_is_the_dense_formula():
    X, theta = instance(K=400, d=5, seed=7)
    rng = np.random.default_rng(4)
    w = np.zeros(X.shape[0])
    w[rng.choice(X.shape[0], 12, replace=False)] = rng.uniform(1, 5, 12)
    i = int(np.argmax(X @ theta))
    p = 1 / (1 + np.exp(-X @ theta))
    s = p * (1 - p)
    A = (X.T * (s * w / w.sum())) @ X
    Y = s[i] * X[i] - s[:, None] * X
    g = p[i] - p + 0.1
    keep = np.arange(X.shape[0]) != i
    T = 2.0 * np.max(np.einsum("ij,ji->i", Y[keep], np.linalg.solve(A, Y[keep].T)) / g[keep] ** 2)
    assert allocation_time(X, theta, w, model="logistic", epsilon=0.1, answer=(i,)) == pytest.approx(T, rel=1e-10)


def test_cost_table_projects_the_features_once(monkeypatch):
    X, theta = instance(K=500, d=5, seed=11)
    svds = counting(monkeypatch, "project_if_deficient")
    rows = cost_table(
        X,
        theta,
        beta,
        epsilons=[0.05, 0.1, 0.2],
        deltas=[0.05],
        source="prior",
        model="logistic",
        answer=(int(np.argmax(X @ theta)),),
    )
    assert len(svds) == 1 and len(rows) == 3
    monkeypatch.undo()
    for r in rows:
        T = characteristic_time(
            X, theta, model="logistic", epsilon=r["epsilon"], answer=(int(np.argmax(X @ theta)),), tol=1e-9
        ).T_star
        assert T <= r["T_star"] <= T * (1 + 1e-3)


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_the_rivals_of_one_arm_are_its_directions_to_the_bit(model):
    X, theta = instance(K=300, d=4, seed=13)
    X[7] = X[8]  # a twin: its pair with 8 has y = 0 and is dropped as before
    mdl = lf._Model(X, theta, model, 0.5)
    for i in (0, 8, 299):
        J = np.delete(np.arange(300), i)
        Y, g = mdl.rivals(i, 0.1)
        Y0, g0 = mdl.directions(np.full(J.size, i), J, 0.1)
        assert np.array_equal(Y, Y0) and np.array_equal(g, g0)
    pairs = lf._Pairs(mdl, 0.1, (8,))
    assert pairs.Y.shape[0] == 298 and 7 not in pairs.pairs[:, 1]
    assert np.array_equal(pairs.pairs[:, 1], np.delete(np.arange(300), [7, 8]))


def test_shared_features_hold_only_inside_their_block_and_for_that_array(monkeypatch):
    X, theta = instance(K=200, d=4, seed=17)
    svds = counting(monkeypatch, "project_if_deficient")
    with lf.shared_features(X):
        with lf.shared_features(X):  # nested on the same array: still one projection
            lf._Model(X, theta, "linear", 1.0)
        lf._Model(X.copy(), theta, "linear", 1.0)  # an equal array, another object: projected anew
    assert len(svds) == 2
    lf._Model(X, theta, "linear", 1.0)  # the block is closed: projected anew
    assert len(svds) == 3
