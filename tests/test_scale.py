"""Algorithms at library scale: batch updates, spanning-set starts, refusals of quadratic algorithms."""

from __future__ import annotations

import numpy as np
import pytest

from screenbai.bandits import make_policy
from screenbai.bandits.estimators import BATCH_REBUILD, RidgeState, TrackedRidgeState
from screenbai.bandits.gifa import INIT_ALL_MAX_K


def _sequential(state_cls, X, arms, rewards, **kw):
    st = state_cls(X, 1.0, **kw)
    for a, r in zip(arms, rewards):
        st.update(int(a), float(r))
    return st


@pytest.mark.parametrize("state_cls", [RidgeState, TrackedRidgeState])
def test_a_large_batch_is_one_exact_rebuild_equal_to_sequential_updates(state_cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    arms = rng.integers(300, size=BATCH_REBUILD + 77)
    rewards = rng.standard_normal(arms.size)
    batch = state_cls(X, 1.0, refresh_every=10**9)
    calls = []
    batch._add = lambda *a: calls.append(a)  # a rank-one step would be recorded here
    batch.update_many(arms, rewards)
    assert calls == []
    seq = _sequential(state_cls, X, arms, rewards, refresh_every=10**9)
    np.testing.assert_allclose(batch.P, seq.P, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(batch.diag, seq.diag, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(batch.b, seq.b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(batch.counts, seq.counts)
    assert batch.logdet == pytest.approx(seq.logdet, rel=1e-10)
    if state_cls is TrackedRidgeState:
        np.testing.assert_allclose(batch.mu, seq.mu, rtol=1e-8, atol=1e-10)


def test_a_small_batch_stays_bit_identical_to_sequential_updates():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    arms, rewards = rng.integers(50, size=40), rng.standard_normal(40)
    batch = TrackedRidgeState(X, 1.0)
    batch.update_many(arms, rewards)
    seq = _sequential(TrackedRidgeState, X, arms, rewards)
    np.testing.assert_array_equal(batch.P, seq.P)
    np.testing.assert_array_equal(batch.mu, seq.mu)


def _first_batch(policy) -> np.ndarray:
    return np.atleast_1d(policy.ask())


@pytest.mark.parametrize("name", ["m-lingape", "lingape"])
def test_auto_start_is_a_spanning_set_above_the_threshold(name):
    rng = np.random.default_rng(2)
    d = 5
    big = rng.standard_normal((INIT_ALL_MAX_K + 1, d))
    first = _first_batch(make_policy(name, big, epsilon=0.1, delta=0.05, rng=0))
    assert first.size == d and np.linalg.matrix_rank(big[first]) == d
    small = big[:INIT_ALL_MAX_K]
    np.testing.assert_array_equal(_first_batch(make_policy(name, small, epsilon=0.1, delta=0.05, rng=0)),
                                  np.arange(INIT_ALL_MAX_K))
    # the paper's start stays available at any K, and "span" at any K
    assert _first_batch(make_policy(name, big, epsilon=0.1, delta=0.05, init="all", rng=0)).size == big.shape[0]
    assert _first_batch(make_policy(name, small, epsilon=0.1, delta=0.05, init="span", rng=0)).size == d


def test_spanning_start_on_rank_deficient_features_uses_their_span():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 3)) @ rng.standard_normal((3, 6))  # rank 3 in R^6
    first = _first_batch(make_policy("m-lingape", X, epsilon=0.1, delta=0.05, init="span", rng=0))
    assert first.size == 3 and np.linalg.matrix_rank(X[first]) == 3


@pytest.mark.parametrize("name, params, instead", [
    ("lingifa", {}, "m-LinGapE"),
    ("m-lingape", {"compute_jt": "ugape"}, "m-LinGapE"),
    ("xy-static", {}, "m-LinGapE or LinGapE"),
    ("g-allocation", {}, "m-LinGapE or LinGapE"),
    ("xy-adaptive", {}, "m-LinGapE or LinGapE"),
])
def test_quadratic_algorithms_refuse_a_large_K_and_name_the_alternative(name, params, instead):
    from screenbai.bandits.gifa import GIFA
    from screenbai.bandits.linalg import MAX_K_QUADRATIC

    X = np.random.default_rng(4).standard_normal((MAX_K_QUADRATIC + 1, 3))
    with pytest.raises(ValueError, match=rf"K x K matrix: K = 16,385 arms would need 2 GiB.*Use {instead}"):
        if "compute_jt" in params:  # the generic engine with a UGapE-type J(t)
            GIFA(X, m=1, compute_jt="ugape", compute_bt="gifa", stopping="ugape", epsilon=0.1, delta=0.05)
        else:
            make_policy(name, X, delta=0.05)
    make_policy(name if name != "m-lingape" else "lingifa", X[:MAX_K_QUADRATIC // 64], delta=0.05)  # small K: fine
    # individual indices need no K x K matrix: LinGIFA accepts any K with them
    make_policy("lingifa", X, delta=0.05, index="individual")


def test_calibration_width_from_rows_bounds_the_exact_one_from_below_within_a_factor_two():
    from screenbai.bandits import glgape

    rng = np.random.default_rng(5)
    K, d = glgape.EXACT_WIDTH_MAX_K + 500, 4
    Z = rng.standard_normal((K, d)) * np.array([3.0, 1.0, 0.5, 0.2])
    A = Z[:50].T @ Z[:50]
    P = np.linalg.inv(A)
    for c_lo, c_hi in ((0.05, 0.25), (0.25, 0.25)):
        approx = glgape.max_pair_width(Z, P, c_lo, c_hi)
        # the exact value by the K x K formula on the same arms
        G = Z @ P @ Z.T
        q = np.diag(G)
        exact2 = max(float(np.max(np.where(np.eye(K, dtype=bool), -np.inf,
                                            a * a * q[:, None] - 2 * a * b * G + b * b * q[None, :])))
                     for a, b in glgape.corners(c_lo, c_hi))
        exact = np.sqrt(exact2)
        assert exact / 2 <= approx <= exact * (1 + 1e-12)
        assert approx > 0.9 * exact  # the farthest-pair steps find (nearly) the widest pair here


def test_glgape_selection_auto_follows_K():
    rng = np.random.default_rng(6)
    from screenbai.bandits.glgape import RATIO_MAX_K

    X = rng.standard_normal((RATIO_MAX_K + 1, 3))
    assert make_policy("glgape", X, c_mu=0.1).rule == "greedy"
    assert make_policy("glgape", X[:RATIO_MAX_K], c_mu=0.1).rule == "ratio"
    assert make_policy("glgape", X, c_mu=0.1, selection="ratio").rule == "ratio"


def test_the_kept_gram_row_follows_the_updates():
    from screenbai.bandits.estimators import KEEP_ROW_MIN_K

    rng = np.random.default_rng(7)
    X = rng.standard_normal((KEEP_ROW_MIN_K, 4))
    st = TrackedRidgeState(X, 1.0)
    assert st.keep_row and not TrackedRidgeState(X[:100], 1.0).keep_row
    row = st.gram_row(3)
    assert st.gram_row(3) is row  # kept: no second pass
    for a in rng.integers(X.shape[0], size=25):
        st.update(int(a), float(rng.standard_normal()))
    np.testing.assert_allclose(st.gram_row(3), X @ (st.P @ X[3]), rtol=1e-10, atol=1e-12)
    fresh = st.gram_row(5)  # another arm: computed afresh, then kept instead
    np.testing.assert_array_equal(fresh, X @ (st.P @ X[5]))
    st.update(7, 1.0)
    np.testing.assert_allclose(st.gram_row(5), X @ (st.P @ X[5]), rtol=1e-10, atol=1e-12)
