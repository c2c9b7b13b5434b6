"""Tests of the shared engine (policy protocol, estimators, selection rules, runner): spec 1.2, 1.3, 1.6."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from screenbai.bandits import Instance, make_policy, replicate, run
from screenbai.bandits.numerics.estimators import RidgeState, project
from screenbai.bandits.numerics.rules import L1Design, greedy_arm, largest_variance_arm
from screenbai.bandits.sim.generators import reda_classic, soare


# ---------------------------------------------------------------------- RidgeState (spec 1.3, P1)
def _direct(X, counts, b, lam):
    V = lam * np.eye(X.shape[1]) + (X.T * counts) @ X
    P = np.linalg.inv(V)
    return P, P @ b, np.linalg.slogdet(V)[1], np.einsum("ij,jk,ik->i", X, P, X)


@pytest.mark.parametrize("refresh_every", [37, 10**9])
def test_ridge_state_equals_direct_solve(refresh_every):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 4))
    st = RidgeState(X, lambda0=0.5, refresh_every=refresh_every)
    counts, b = np.zeros(9), np.zeros(4)
    for _ in range(3000):
        a = int(rng.integers(9))
        r = float(rng.standard_normal())
        st.update(a, r)
        counts[a] += 1
        b += r * X[a]
    P, theta, logdet, diag = _direct(X, counts, b, 0.5)
    assert np.allclose(st.counts, counts)
    assert np.allclose(st.b, b)
    assert np.allclose(st.P, P, rtol=1e-8, atol=1e-12)
    assert np.allclose(st.theta, theta, rtol=1e-7, atol=1e-10)
    assert st.logdet == pytest.approx(logdet, rel=1e-10)
    assert np.allclose(st.diag, diag, rtol=1e-7, atol=1e-12)
    st.refresh()
    assert np.allclose(st.P, P, rtol=1e-12, atol=1e-15)
    assert np.allclose(st.P, st.P.T)
    assert st.logdet == pytest.approx(logdet, rel=1e-12)
    assert np.allclose(st.diag, diag, rtol=1e-12)


def test_ridge_state_batch_update_and_bad_lambda():
    X = np.eye(3)
    st = RidgeState(X, 1.0)
    st.update_many(np.array([0, 0, 2]), np.array([1.0, 3.0, -1.0]))
    assert np.allclose(st.theta, [4.0 / 3.0, 0.0, -0.5])
    with pytest.raises(ValueError, match="lambda0"):
        RidgeState(X, -1.0)


def test_ols_state_has_no_inverse_until_the_arms_span():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((6, 3))
    st = RidgeState(X, 0.0, refresh_every=10**6)
    for a, r in [(0, 1.0), (1, 2.0)]:
        st.update(a, r)
    assert st.P is None and st.refresh() is False  # two arms cannot span R^3
    st.update(2, -1.0)
    assert st.refresh() is True
    for a in rng.integers(0, 6, size=50):  # rank-one updates from here on
        st.update(int(a), float(rng.normal()))
    V = (X.T * st.counts) @ X
    assert np.allclose(st.P, np.linalg.inv(V))
    assert np.allclose(st.theta, np.linalg.solve(V, st.b))
    assert np.allclose(st.diag, np.einsum("ij,jk,ik->i", X, np.linalg.inv(V), X))
    assert np.isclose(st.logdet, np.linalg.slogdet(V)[1])


# ---------------------------------------------------------------------- projection (spec 1.2)
def test_project_preserves_predictions_and_gives_rank():
    rng = np.random.default_rng(1)
    basis = rng.standard_normal((2, 5))
    X = rng.standard_normal((7, 2)) @ basis  # rank 2 in R^5
    Z, Q = project(X)
    assert Z.shape == (7, 2) and Q.shape == (5, 2)
    assert np.allclose(Q.T @ Q, np.eye(2))
    theta = rng.standard_normal(5)
    assert np.allclose(Z @ (Q.T @ theta), X @ theta)  # predictions preserved
    vt = rng.standard_normal(2)
    assert np.allclose(Z @ vt, X @ (Q @ vt))
    Zf, Qf = project(rng.standard_normal((6, 3)))
    assert Zf.shape == (6, 3)
    with pytest.raises(ValueError, match="zero"):
        project(np.zeros((3, 2)))


# ---------------------------------------------------------------------- L1 design and selection rules (spec 1.6)
def _brute_l1(X, y):
    """min ||w||_1 s.t. X^T w = y over all basic solutions (supports of size <= d)."""
    K, d = X.shape
    best = np.inf
    for size in range(1, d + 1):
        for S in itertools.combinations(range(K), size):
            A = X[list(S)].T
            w, *_ = np.linalg.lstsq(A, y, rcond=None)
            if np.allclose(A @ w, y, atol=1e-9):
                best = min(best, np.abs(w).sum())
    return best


@pytest.mark.parametrize("d", [2, 3])
def test_l1_design_feasible_and_optimal(d):
    rng = np.random.default_rng(d)
    X = rng.standard_normal((5, d))
    design = L1Design(X)
    for trial in range(6):
        i, j = rng.choice(5, size=2, replace=False)
        y = X[i] - X[j] if trial % 2 == 0 else rng.standard_normal(d)
        key = (trial, int(i), int(j))
        support, p, rho = design.proportions(key, y)
        assert np.all(p > 0) and p.sum() == pytest.approx(1.0) and support.size <= d
        # feasibility: some sign pattern of w = rho * p on the support solves X^T w = y
        feasible = any(
            np.allclose(X[support].T @ (np.array(signs) * rho * p), y, atol=1e-7)
            for signs in itertools.product((-1.0, 1.0), repeat=support.size)
        )
        assert feasible
        assert rho == pytest.approx(_brute_l1(X, y), rel=1e-7)
    n_before = design.n_solved
    design.proportions(key, np.ones(d))  # cached key: no new LP
    assert design.n_solved == n_before


def test_ratio_rule_pulls_argmin_count_over_proportion():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((6, 3))
    design = L1Design(X)
    y = X[0] - X[4]
    support, p, _ = design.proportions("k", y)
    for _ in range(20):
        counts = rng.integers(0, 50, size=6).astype(float) + rng.random(6)  # no ties
        want = int(support[np.argmin(counts[support] / p)])
        assert design.ratio_arm("k", y, counts, rng) == want
    counts = np.full(6, 10.0)
    counts[support[-1]] = 0.0  # never pulled arm of the support comes first
    assert design.ratio_arm("k", y, counts, rng) == support[-1]


def test_greedy_rule_equals_brute_force():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((10, 3))
    st = RidgeState(X, 0.7)
    for _ in range(25):
        st.update(int(rng.integers(10)), float(rng.standard_normal()))
    V = st.design_matrix()
    for _ in range(10):
        y = rng.standard_normal(3)
        brute = [y @ np.linalg.inv(V + np.outer(x, x)) @ y for x in X]
        assert greedy_arm(st, y, rng) == int(np.argmin(brute))


def test_largest_variance_rule():
    X = np.eye(3)
    st = RidgeState(X, 1.0)
    for a, k in ((0, 5), (1, 1), (2, 9)):
        for _ in range(k):
            st.update(a, 0.0)
    rng = np.random.default_rng(0)
    assert largest_variance_arm(st.diag, 0, 1, rng) == 1
    assert largest_variance_arm(st.diag, 2, 0, rng) == 0
    st2 = RidgeState(X, 1.0)
    picks = {largest_variance_arm(st2.diag, 0, 2, rng) for _ in range(40)}
    assert picks == {0, 2}  # equal variances: random tie-break


# ---------------------------------------------------------------------- policy protocol and validation
def _policy(**kw):
    return make_policy("m-lingape", np.eye(3), **{"m": 1, "rng": 0, **kw})


def test_protocol_errors():
    pol = _policy()
    with pytest.raises(RuntimeError, match="ask"):
        pol.tell([0], [1.0])  # tell without ask
    arms = pol.ask()
    assert np.array_equal(pol.ask(), arms)  # asking twice returns the pending arms
    with pytest.raises(ValueError, match="asked"):
        pol.tell(arms[:-1], [0.0] * (arms.size - 1))  # arms not asked
    with pytest.raises(ValueError, match="reward"):
        pol.tell(arms, [0.0] * (arms.size + 1))  # wrong number of rewards
    with pytest.raises(ValueError, match="finite"):
        pol.tell(arms, [np.nan] + [0.0] * (arms.size - 1))
    pol.tell(arms, [1.0, 0.0, 0.0])
    res = run(pol, Instance(np.eye(3), [1.0, 0.0, 0.0], sigma=0.1).environment(0))
    assert res.stopped and pol.done
    with pytest.raises(RuntimeError, match="finished"):
        pol.ask()


def test_input_errors_name_the_value():
    X = np.eye(3)
    bad = X.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="arm 1, column 2"):
        _policy().__class__(bad)
    with pytest.raises(ValueError, match="m = 3"):
        make_policy("m-lingape", X, m=3)
    with pytest.raises(ValueError, match="m = 5"):
        make_policy("lingifa", X, m=5)
    for delta in (0.0, 1.0, 1.5, -0.2):
        with pytest.raises(ValueError, match=f"delta.*{delta}"):
            make_policy("m-lingape", X, delta=delta)
    with pytest.raises(ValueError, match="shape"):
        make_policy("m-lingape", np.ones(3))
    with pytest.raises(ValueError, match="4 entries but features has 3 arms"):
        Instance(X, [0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="max_samples"):
        make_policy("lucb", X, max_samples=0)
    with pytest.raises(KeyError, match="no-such-algo"):
        make_policy("no-such-algo", X)
    with pytest.raises(TypeError, match="parameters accepted"):
        make_policy("lucb", X, not_a_parameter=1)


# ---------------------------------------------------------------------- runner reproducibility
_COLS = ["replication", "samples", "stopped", "recommendation", "correct", "pulls"]


def _records(df: pd.DataFrame) -> list:
    return df[_COLS].to_dict("records")


def test_runner_same_records_for_one_or_two_jobs():
    inst = reda_classic(4, 2, omega=np.pi / 3)
    params = {"m": 2, "S": "oracle", "threshold": "heuristic"}
    one = replicate(inst, "m-lingape", params, n_reps=12, seed=11, n_jobs=1)
    two = replicate(inst, "m-lingape", params, n_reps=12, seed=11, n_jobs=2)
    assert _records(one) == _records(two)
    other = replicate(inst, "m-lingape", params, n_reps=12, seed=12, n_jobs=1)
    assert _records(other) != _records(one)  # the seed matters


def test_runner_chunking_does_not_change_records():
    inst = soare(2, omega=0.5, sigma=0.5)
    params = {"S": "oracle", "sigma": "oracle"}
    whole = replicate(inst, "lingape", params, n_reps=10, seed=3, n_jobs=1)
    parts = pd.concat(
        [
            replicate(inst, "lingape", params, n_reps=4, seed=3, start=0),
            replicate(inst, "lingape", params, n_reps=3, seed=3, start=4, n_jobs=2),
            replicate(inst, "lingape", params, n_reps=3, seed=3, start=7),
        ],
        ignore_index=True,
    )
    assert _records(whole) == _records(parts)
    assert whole["replication"].tolist() == list(range(10))


# ---------------------------------------------------------------------- counts and the number of arms
@pytest.mark.parametrize("name,params", [("m-lingape", {}), ("glgape", {}), ("lucb", {}), ("xy-static", {})])
def test_a_single_arm_is_refused(name, params):
    with pytest.raises(ValueError, match="1 arm; identifying the best arm needs at least 2 arms"):
        make_policy(name, np.ones((1, 3)), **params)
