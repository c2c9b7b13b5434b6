"""Algorithms at library scale: batch updates, spanning-set starts, refusals of quadratic algorithms."""

from __future__ import annotations

import numpy as np
import pytest

from screenbai.bandits import make_policy
from screenbai.bandits.linear.gifa import INIT_ALL_MAX_K
from screenbai.bandits.numerics.estimators import BATCH_REBUILD, RidgeState, TrackedRidgeState


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
    from screenbai.bandits.linear.gifa import GIFA
    from screenbai.bandits.numerics.linalg import MAX_K_QUADRATIC

    X = np.random.default_rng(4).standard_normal((MAX_K_QUADRATIC + 1, 3))
    with pytest.raises(ValueError, match=rf"K x K matrix: K = 16,385 arms would need 2 GiB.*Use {instead}"):
        if "compute_jt" in params:  # the generic engine with a UGapE-type J(t)
            GIFA(X, m=1, compute_jt="ugape", compute_bt="gifa", stopping="ugape", epsilon=0.1, delta=0.05)
        else:
            make_policy(name, X, delta=0.05)
    make_policy(name if name != "m-lingape" else "lingifa", X[:MAX_K_QUADRATIC // 64], delta=0.05)  # small K: fine
    # individual indices need no K x K matrix: LinGIFA accepts any K with them
    make_policy("lingifa", X, delta=0.05, index="individual")


@pytest.mark.slow
def test_calibration_width_from_rows_bounds_the_exact_one_from_below_within_a_factor_two():
    from screenbai.bandits.logistic import glgape

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
    from screenbai.bandits.logistic.glgape import RATIO_MAX_K

    X = rng.standard_normal((RATIO_MAX_K + 1, 3))
    assert make_policy("glgape", X, c_mu=0.1).rule == "greedy"
    assert make_policy("glgape", X[:RATIO_MAX_K], c_mu=0.1).rule == "ratio"
    assert make_policy("glgape", X, c_mu=0.1, selection="ratio").rule == "ratio"


def test_the_kept_gram_row_follows_the_updates():
    from screenbai.bandits.numerics.features import LARGE_K as KEEP_ROW_MIN_K

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


def test_the_second_kept_row_follows_the_updates_and_serves_as_the_update_product(monkeypatch):
    """The estimator's second kept row (m-LinGapE's greedy rule keeps c_t's there) follows every update by
    rank one, as the first; an update given a kept row as X P x_a (the row itself, read before it is
    updated) gives the plain update's P, diagonal and means; a twin shares the row; asking for the second
    row's arm as the first row swaps the two (no pass)."""
    from screenbai.bandits.numerics import features

    rng = np.random.default_rng(17)
    X = rng.standard_normal((features.LARGE_K, 4))
    X[9] = X[5]  # a twin of the second row's arm
    st = TrackedRidgeState(X, 1.0)
    monkeypatch.setattr(features, "LARGE_K", 10**12)
    plain = TrackedRidgeState(X, 1.0)
    st.gram_row(3)
    st.keep_second(5, X @ (st.P @ X[5]))
    assert st.kept_row(9) is st._second and st.kept_row(3) is st._row and st.kept_row(4) is None
    plain.keep_second(5, X @ X[5])  # small K keeps nothing
    assert plain.kept_row(5) is None
    arms = [5, 3, 9, 7, 5, 5, 3, 11, 9, 2]
    reused = 0
    for a, r in zip(arms, rng.standard_normal(len(arms))):
        product = st.kept_row(a)
        reused += product is not None
        st.update(a, float(r), product=product)
        plain.update(a, float(r))
        for w, row in ((3, st._row), (5, st._second)):
            np.testing.assert_allclose(row, X @ (st.P @ X[w]), rtol=1e-10, atol=1e-12)
    assert reused == 7  # 5, 3 and the twin 9: every pull but those of 7, 11 and 2
    for name in ("P", "diag", "mu"):
        np.testing.assert_allclose(getattr(st, name), getattr(plain, name), rtol=1e-10, atol=1e-12)
    second = st._second
    assert st.gram_row(5) is second and st._row_arm == 5 and st._second_arm == 3  # swapped, no pass
    st.refresh()
    assert st._row is None and st._second is None  # forgotten at the exact rebuild


def _run_fixed_outcomes(policy, X, theta, outcomes, model: str, n: int):
    """Run ``policy`` to ``n`` tests; outcome k of arm a is the fixed draw ``outcomes[a, k % 8]`` (the same
    outcomes whatever the order of the tests): the arms chosen and the stopping statistic of each round."""
    chosen, stats, seen = [], [], np.zeros(len(X), dtype=int)
    while policy.n_samples < n:
        arms = np.atleast_1d(policy.ask())
        z = X[arms] @ theta
        u = outcomes[arms, seen[arms] % 8]
        seen[arms] += 1
        policy.tell(arms, z + u - 0.5 if model == "linear" else (u < 1 / (1 + np.exp(-3 * z))).astype(float))
        chosen.extend(arms.tolist())
        stats.append(policy.diagnostics["stat"])
    return chosen, np.array(stats, dtype=float)


def test_block_argmax_matches_argmax_random_with_ties_across_blocks():
    from screenbai.bandits.numerics.ties import BlockArgmax, argmax_random

    rng = np.random.default_rng(8)
    for values in (rng.standard_normal(1000), np.repeat(rng.integers(0, 5, size=50).astype(float), 20)):
        for size in (1, 7, 1000):
            best = BlockArgmax()
            for s in range(0, values.size, size):
                best.add(values[s : s + size])
            r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
            assert best.result(values, r1) == argmax_random(values, r2)
            assert r1.integers(1 << 30) == r2.integers(1 << 30)  # the same draws were used
            # blocks added in another order, with their offsets (the kept row's block first, as the update does)
            starts = list(range(0, values.size, size))
            shuffled = BlockArgmax()
            for s in rng.permutation(starts):
                shuffled.add(values[s : s + size], int(s))
            r1, r2 = np.random.default_rng(4), np.random.default_rng(4)
            assert shuffled.result(values, r1) == argmax_random(values, r2)
            assert r1.integers(1 << 30) == r2.integers(1 << 30)


def test_the_blockwise_update_at_large_K_equals_the_plain_one(monkeypatch):
    """From LARGE_K on, the rank-one update runs block by block (and can give X v in the same
    pass): the same P, diag, means and kept row as the plain update, up to round-off."""
    from screenbai.bandits.numerics import features

    rng = np.random.default_rng(9)
    X = rng.standard_normal((features.LARGE_K + 123, 4))
    arms, rewards = rng.integers(len(X), size=30), rng.standard_normal(30)
    v = rng.standard_normal(4)
    big = TrackedRidgeState(X, 1.0)
    big.gram_row(5)
    monkeypatch.setattr(features, "LARGE_K", 10**12)
    plain = TrackedRidgeState(X, 1.0)
    assert big.keep_row and not plain.keep_row
    for a, r in zip(arms, rewards):
        Xv = big.update(int(a), float(r), also=v)
        assert plain.update(int(a), float(r), also=v) is None
        np.testing.assert_allclose(Xv, X @ v, rtol=1e-12, atol=1e-12)
    for name in ("P", "diag", "mu"):
        np.testing.assert_allclose(getattr(big, name), getattr(plain, name), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(big.gram_row(5), plain.gram_row(5), rtol=1e-9, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name, params, model", [
    ("m-lingape", {"m": 1, "epsilon": 0.0, "selection": "greedy"}, "linear"),
    ("glgape", {"epsilon": 1e-9, "c_mu": 0.05}, "logistic"),
])
def test_large_K_passes_make_the_same_choices_as_the_plain_round(monkeypatch, name, params, model):
    """The large-K round (kept Gram row, blockwise update, GLGapE's means from the update's pass, the
    pulled arms kept sorted) chooses the same arms as the plain round on the same data."""
    from screenbai.bandits.numerics import features

    monkeypatch.setattr(features, "BLOCK", 4096)  # many blocks: the sweep's order matters
    rng = np.random.default_rng(10)
    K, d = features.LARGE_K, 5
    X = rng.standard_normal((K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    outcomes = rng.random((K, 8))  # outcome k of arm a: a fixed draw, whatever the order of the tests

    def run(keep_from):
        monkeypatch.setattr(features, "LARGE_K", keep_from)
        policy = make_policy(name, X, rng=np.random.default_rng(1), **params)
        assert policy.state.keep_row == (keep_from == K)
        return _run_fixed_outcomes(policy, X, theta, outcomes, model, 160)

    (fast, fast_stats), (plain, plain_stats) = run(K), run(10**12)
    assert fast == plain
    np.testing.assert_allclose(fast_stats, plain_stats, rtol=1e-9)


@pytest.mark.parametrize("name, params, model, module", [
    ("m-lingape", {"m": 1, "epsilon": 0.0, "selection": "greedy"}, "linear", "screenbai.bandits.linear.gap_indices"),
    ("glgape", {"epsilon": 1e-9, "c_mu": 0.05}, "logistic", "screenbai.bandits.logistic.glgape"),
])
def test_a_twin_of_the_best_arm_takes_the_values_computed_ahead_with_the_same_bits(monkeypatch, name, params,
                                                                                   model, module):
    """Two arms with the same features tie on their means and the round's best alternates between them
    at random; the values the update's sweep computed against one serve the other, its two entries
    swapped (ties.swap_to_twin): the same choices, statistics and draws, bit for bit, as recomputing them."""
    import importlib

    from screenbai.bandits.numerics import estimators, features

    rng = np.random.default_rng(16)
    K, d = features.LARGE_K, 5
    X = rng.standard_normal((K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    X[1] = X[int(np.argmax(X @ theta))]  # the best arm's twin (as in benchmarks/bench_scale.py)
    outcomes = rng.random((K, 8))
    mod = importlib.import_module(module)
    swap, is_twin = mod.swap_to_twin, estimators.RidgeState.is_twin

    def fresh(policy, i: int) -> np.ndarray:
        """The values against arm i, recomputed as a round without the update's sweep does."""
        st = policy.state
        if name == "m-lingape":
            sweep = mod.UcbSweep(st, i, policy.threshold_factor(policy.n_samples), st.mu)
            for s, e in st.source.bounds():
                sweep(s, e)
            return sweep.ucb
        return mod._RoundSweep(policy, st, policy.width_scale(policy.n_samples + 1), st.ahead.mu, None, i).run().U

    def run(use_twins: bool):
        swaps, policy = [], None

        def checked_swap(values, w, i):
            expected = fresh(policy, i)
            best = swap(values, w, i)
            np.testing.assert_array_equal(values, expected)
            swaps.append(best.result(values, np.random.default_rng(0)) == int(np.argmax(expected)))
            return best

        monkeypatch.setattr(mod, "swap_to_twin", checked_swap)
        monkeypatch.setattr(estimators.RidgeState, "is_twin", is_twin if use_twins else (lambda *a: False))
        policy = make_policy(name, X, rng=np.random.default_rng(1), **params)
        chosen, stats = _run_fixed_outcomes(policy, X, theta, outcomes, model, 150)
        assert all(swaps)
        return chosen, np.array(stats, dtype=float), policy.rng.integers(1 << 30), len(swaps)

    (chosen, stats, draw, swaps), (chosen_own, stats_own, draw_own, none) = run(True), run(False)
    assert swaps >= 5 and none == 0  # (each swap checked against the values recomputed, bit for bit)
    assert chosen == chosen_own and draw == draw_own
    np.testing.assert_array_equal(stats, stats_own)


def test_glgape_at_large_K_continues_exactly_after_save_and_load(tmp_path):
    from screenbai.bandits.core.persistence import load_policy, save_policy
    from screenbai.bandits.numerics.features import LARGE_K as KEEP_ROW_MIN_K

    rng = np.random.default_rng(11)
    X = rng.standard_normal((KEEP_ROW_MIN_K, 4)) / 2
    outcome = rng.random(KEEP_ROW_MIN_K) < 0.3
    policy = make_policy("glgape", X, rng=np.random.default_rng(2), epsilon=1e-9, c_mu=0.05)
    while policy.n_samples < 80:
        arms = np.atleast_1d(policy.ask())
        policy.tell(arms, outcome[arms].astype(float))
    assert policy._eta is not None  # the means came from the update's pass
    restored = load_policy(save_policy(policy, tmp_path / "glgape"), X)
    for p in (policy, restored):
        p.chosen = []
        for _ in range(15):
            arms = np.atleast_1d(p.ask())
            p.tell(arms, outcome[arms].astype(float))
            p.chosen.extend(arms.tolist())
    assert restored.chosen == policy.chosen
    np.testing.assert_array_equal(restored.theta, policy.theta)


@pytest.mark.slow
def test_m_lingape_plates_at_large_K_choose_as_the_plain_round(monkeypatch):
    """Plates of 4 tests (chosen on a copy of the design holding the tests in flight, outcomes told
    one by one) at large K choose the same wells as the plain round; the guesses made for the
    recorded design are never used for the copy's."""
    from screenbai.bandits.numerics import features

    rng = np.random.default_rng(14)
    K, d = features.LARGE_K, 20
    X = rng.standard_normal((K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)

    def run(keep_from):
        monkeypatch.setattr(features, "LARGE_K", keep_from)
        policy = make_policy("m-lingape", X, rng=np.random.default_rng(1), m=1, epsilon=0.0, max_samples=150)
        noise, plates = np.random.default_rng(5), []
        while not policy.done:
            arms = policy.propose(4) if policy.n_samples > 30 else np.atleast_1d(policy.ask())
            plates.append(arms.tolist())
            for a in arms if policy.n_samples > 30 else [arms]:
                a = np.atleast_1d(a)
                policy.tell(a, X[a] @ theta + 0.3 * noise.standard_normal(a.size))
        return plates

    assert run(K) == run(10**12)


@pytest.mark.slow
def test_m_lingape_at_large_K_continues_exactly_after_save_and_load(tmp_path):
    """A restored m-LinGapE has none of the values guessed ahead (the greedy rule's product, the
    update's scores for the last pair, the next upper bounds): it recomputes them, with the same bits."""
    from screenbai.bandits.core.persistence import load_policy, save_policy
    from screenbai.bandits.numerics.features import LARGE_K as KEEP_ROW_MIN_K

    rng = np.random.default_rng(13)
    d = 20
    X = rng.standard_normal((KEEP_ROW_MIN_K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    noise = rng.standard_normal((KEEP_ROW_MIN_K, 4)) / 2
    policy = make_policy("m-lingape", X, rng=np.random.default_rng(2), m=1, epsilon=0.0)
    seen = np.zeros(KEEP_ROW_MIN_K, dtype=int)

    def step(p, seen):
        arms = np.atleast_1d(p.ask())
        p.tell(arms, X[arms] @ theta + noise[arms, seen[arms] % 4])
        seen[arms] += 1
        return arms.tolist()

    while policy.n_samples < 100:
        step(policy, seen)
    saved, guessed = [], 0
    for k in range(12):  # save points before rounds that use a guess and before rounds that do not
        saved.append((save_policy(policy, tmp_path / f"at{k}"), seen.copy(), k))
        before = policy.gaps.products_reused + policy.gaps.guesses_right
        step(policy, seen)
        guessed += policy.gaps.products_reused + policy.gaps.guesses_right > before
    chosen = [step(policy, seen) for _ in range(10)]
    assert 0 < guessed < 12
    for path, seen_at, k in saved:
        restored = load_policy(path, X)
        for _ in range(12 - k):
            step(restored, seen_at)
        assert [step(restored, seen_at) for _ in range(10)] == chosen
        np.testing.assert_array_equal(restored.state.mu, policy.state.mu)
        np.testing.assert_array_equal(restored.state.diag, policy.state.diag)


def test_the_corner_maximum_in_fewer_operations_equals_the_four_corners():
    from screenbai.bandits.logistic.glgape_width import max_corner_sq

    rng = np.random.default_rng(12)
    Z = rng.standard_normal((2000, 3))
    A = rng.standard_normal((3, 3))
    G = Z @ (A @ A.T) @ Z.T
    q = np.diag(G).copy()
    q_jj, q_ij = q, G[7] + rng.normal(scale=1e-3, size=q.size)  # some pairs with D < 0, as round-off gives
    assert (q[7] + q_jj - 2 * q_ij < 0).any()
    for lo, hi in ((0.05, 0.25), (0.25, 0.25), (1e-3, 0.2)):
        exact = np.maximum(max_corner_sq(q[7], q_jj, q_ij, lo, hi), 0.0)
        fast = np.maximum(max_corner_sq(q[7], q_jj, q_ij, lo, hi, fewer_ops=True), 0.0)
        np.testing.assert_allclose(fast, exact, rtol=1e-12, atol=1e-12 * q.max())


def test_logistic_into_matches_expit_and_saturates_without_warnings():
    import warnings

    from scipy.special import expit

    from screenbai.bandits.numerics.glm import logistic_into

    eta = np.concatenate([np.linspace(-40, 40, 1001), [-800.0, 800.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = logistic_into(eta, np.empty_like(eta))
    np.testing.assert_allclose(out, expit(eta), rtol=1e-15, atol=0)
    assert out[-3] == 0.0 and out[-2] == 1.0 and out[-1] == 0.5



@pytest.mark.slow
def test_m_lingape_rounds_reading_X_once_equal_rounds_reading_it_twice(monkeypatch):
    """At large K the greedy rule keeps the Gram row of c_t (X P x_c) as the estimator's second row,
    updated by rank one with every outcome: when c_t comes back the greedy rule reads no X, and the
    update after pulling an arm whose row is kept (c, or the round's best) reads none either. An update
    also computes the greedy scores for the last pair (b, c) from the two kept rows, which the next
    round takes if its pair is the same. The guessed scores equal, bit for bit, those the greedy rule
    computes from the same rows (so guessing or not gives the same bits); the kept rows equal the fresh
    products X P x up to round-off; and a run that keeps no second row and never takes a kept row for the
    update (reading X twice a round) makes the same choices, with the same statistics up to round-off."""
    from screenbai.bandits.linear import gap_indices
    from screenbai.bandits.linear.gap_indices import GapIndices, pair_scores
    from screenbai.bandits.numerics import features

    monkeypatch.setattr(features, "BLOCK", 4096)  # many blocks, visited out of order by the update
    rng = np.random.default_rng(12)
    K, d = features.LARGE_K, 20  # d = 20: early on, the greedy rule mostly pulls c_t
    X = rng.standard_normal((K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    noise = rng.standard_normal((K, 8)) / 2
    sweep_ahead = GapIndices.sweep_ahead

    def run(reuse: bool):
        policy = make_policy("m-lingape", X, rng=np.random.default_rng(1), m=1, epsilon=0.0, refresh_every=50)
        assert policy.state.keep_row
        if not reuse:  # no second row kept, no kept row taken by the update, no guess
            monkeypatch.setattr(policy.gaps, "product_for", lambda a: None)
            monkeypatch.setattr(policy.gaps, "sweep_ahead", lambda f, guess: sweep_ahead(policy.gaps, f, False))
            monkeypatch.setattr(policy.state, "keep_second", lambda i, row: None)
        chosen, stats, seen, compared, checked, guessed = [], [], np.zeros(K, dtype=int), 0, 0, 0
        while policy.n_samples < 200:
            arms = np.atleast_1d(policy.ask())  # chosen by the last tell()
            st = policy.state
            if policy.gaps.guesses_right > guessed:  # the greedy scores came from the update's sweep
                b, c = st.ahead.guess
                assert st.keeps_row(b) and st.kept_row(c) is st._second
                fresh = np.empty(K)
                pair_scores(st.gram_row(b), st._second, st.diag, fresh)
                np.testing.assert_array_equal(st.ahead.scores, fresh)
                checked += 1
            if st._second is not None:  # the kept row of c: X P x_c up to round-off
                np.testing.assert_allclose(st._second, X @ (st.P @ X[st._second_arm]), rtol=1e-9, atol=1e-12)
                compared += 1
            guessed = policy.gaps.guesses_right
            policy.tell(arms, X[arms] @ theta + noise[arms, seen[arms] % 8])
            seen[arms] += 1
            chosen.extend(arms.tolist())
            stats.append(policy.diagnostics["stat"])
        assert checked == policy.gaps.guesses_right
        return chosen, np.array(stats), policy, compared

    chosen_adaptive, stats_adaptive, adaptive, _ = run(True)  # guesses only while pairs come back often
    monkeypatch.setattr(gap_indices, "GUESS_MIN_RATE", 0.0)  # every update guesses
    chosen, stats, reused, compared = run(True)
    chosen_own, stats_own, own, _ = run(False)
    assert chosen == chosen_own == chosen_adaptive
    tries = [p.gaps.guesses_right + p.gaps.guesses_wrong for p in (adaptive, reused)]
    assert tries[0] < tries[1], tries  # fewer guesses while pairs come back rarely
    np.testing.assert_array_equal(stats, stats_adaptive)  # a guess changes no bit
    for name in ("mu", "diag", "P"):
        np.testing.assert_array_equal(getattr(reused.state, name), getattr(adaptive.state, name))
    np.testing.assert_allclose(stats, stats_own, rtol=1e-9, atol=1e-12)
    for name in ("mu", "diag", "P"):
        np.testing.assert_allclose(getattr(reused.state, name), getattr(own.state, name), rtol=1e-9, atol=1e-12)
    assert reused.rng.integers(1 << 30) == own.rng.integers(1 << 30)
    gaps = reused.gaps
    assert compared > 100 and own.gaps.guesses_right == own.gaps.rows_reused == own.gaps.products_reused == 0
    # every path exercised: the update's product kept or not, c's row kept or not, the scores guessed or not
    counts = [gaps.products_reused, gaps.products_missed, gaps.rows_reused, gaps.rows_missed, gaps.guesses_right,
              gaps.guesses_wrong]
    assert min(counts) >= 10, vars(gaps)


def test_the_feature_source_walks_the_arms_as_the_plain_forms_and_serves_a_memory_map(tmp_path, monkeypatch):
    """FeatureSource (the one home of the large-K plumbing): its blocks cover the arms once, in
    order; its products equal the plain ones (bit for bit with X @ v per block and column, as the
    estimator and the greedy rule compute them, whether one column is asked or two); and an estimator over a read-only
    memory map of the features (nothing loaded up front) gives the same bits as over the array."""
    from screenbai.bandits.numerics import features
    from screenbai.bandits.numerics.features import FeatureSource

    monkeypatch.setattr(features, "BLOCK", 1000)
    monkeypatch.setattr(features, "UNSPLIT_MAX", 2000)
    rng = np.random.default_rng(15)
    X = rng.standard_normal((4567, 6))
    src = FeatureSource(X)
    assert FeatureSource.of(src) is src and not src.large
    bounds = src.bounds()
    assert bounds[0][0] == 0 and bounds[-1][1] == len(X) and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    assert len(bounds) == 5 and len(FeatureSource(X[:2000]).bounds()) == 1
    v = rng.standard_normal(len(X))
    pieces = src.blocks(v, rows=True)
    assert np.array_equal(np.concatenate([p[0] for p in pieces]), v)
    assert np.array_equal(np.vstack([p[1] for p in pieces]), X)
    V = rng.standard_normal((6, 2))
    got = np.hstack([block.copy() for _, _, block in src.products(V)])
    assert np.array_equal(got, np.hstack([np.vstack([X[s:e] @ V[:, 0], X[s:e] @ V[:, 1]]) for s, e in bounds]))
    one = np.concatenate([block[0].copy() for _, _, block in src.products(V[:, 1:])])
    assert np.array_equal(one, got[1])  # a column's bits do not depend on the other column
    A = rng.standard_normal((6, 6))
    P = A @ A.T
    np.testing.assert_allclose(src.quad_diag(P), np.diag(X @ P @ X.T), rtol=1e-12)
    np.testing.assert_allclose(src.gram_row(P, X[3]), X @ P @ X[3], rtol=1e-12)
    w = rng.integers(0, 3, len(X)).astype(float)
    np.testing.assert_allclose(src.weighted_gram(w), X.T @ np.diag(w) @ X, rtol=1e-12)
    # a memory-mapped file: the estimator walks it through its source, with the same bits
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    monkeypatch.setattr(features, "LARGE_K", 1000)  # the large-K paths on both
    states = [TrackedRidgeState(FeatureSource(Y), 1.0, refresh_every=7) for Y in (X, mapped)]
    assert all(st.keep_row and st.source.large for st in states)
    assert isinstance(states[1].X, np.memmap)
    big = states[1].source  # the large-K exact rebuild's forms: blockwise diag, the design over tested arms only
    np.testing.assert_allclose(big.quad_diag(P), np.diag(X @ P @ X.T), rtol=1e-12)
    w[w < 2] = 0.0  # most arms untested
    np.testing.assert_allclose(big.weighted_gram(w), X.T @ np.diag(w) @ X, rtol=1e-12)
    for a, r in zip(rng.integers(len(X), size=20), rng.standard_normal(20)):
        for st in states:
            st.gram_row(int(a) // 2)
            st.update(int(a), float(r))
    for name in ("P", "diag", "mu", "_row"):
        assert np.array_equal(getattr(states[0], name), getattr(states[1], name)), name
