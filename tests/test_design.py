"""Optimal designs and rounding (spec 1.7, P6, P7, Appendix A.2)."""

import warnings

import numpy as np
import pytest

from screenbai.bandits.numerics.design import (
    DesignStallWarning,
    frank_wolfe,
    g_value,
    greedy_g_allocation,
    kumar_yildirim_init,
    round_design,
    spread_order,
    spread_order_ranked,
    variances,
    wynn,
)


def unit_rows(K, d, seed):
    Z = np.random.default_rng(seed).standard_normal((K, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


@pytest.mark.parametrize("seed,K,d", [(0, 50, 10), (1, 30, 5), (2, 200, 8)])
def test_d_exact_reaches_kiefer_wolfowitz_optimum(seed, K, d):
    Z = np.random.default_rng(seed).standard_normal((K, d))
    pi, info = frank_wolfe(Z, mode="D-exact", n_iter=20000, tol=1e-3, return_info=True)
    assert pi.min() >= 0 and abs(pi.sum() - 1) < 1e-12
    g = g_value(Z, pi)
    assert d - 1e-8 <= g <= d * (1 + 1.1e-3)  # Kiefer-Wolfowitz: min g = d, never below
    assert info["n_iter"] < 20000  # stopped by the tolerance, not the cap


def test_appendix_a2_stall_and_d_exact_numbers():
    """A.2: literal FWG freezes at 12.47 (optimum 10); D-exact gives 11.67 / 10.42 after 10 / 100 its."""
    Z = unit_rows(50, 10, 0)
    with pytest.warns(DesignStallWarning, match="stalled"):
        pi, info = frank_wolfe(Z, mode="G-linesearch", n_iter=300, tol=0, return_info=True)
    assert info["stalled"]
    assert g_value(Z, pi) > 10 * 1.2  # stuck well above the optimum d = 10
    # document the pitfall: the literal method never gets close even with many iterations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DesignStallWarning)
        assert g_value(Z, frank_wolfe(Z, mode="G-linesearch", n_iter=1000, tol=0)) > 12
    g10 = g_value(Z, frank_wolfe(Z, mode="D-exact", n_iter=10, tol=0))
    g100 = g_value(Z, frank_wolfe(Z, mode="D-exact", n_iter=100, tol=0))
    g300 = g_value(Z, frank_wolfe(Z, mode="D-exact", n_iter=300, tol=0))
    assert 10 < g300 < g100 < g10 < 12.47
    assert g300 < 10.25 and g100 < 10.6


def test_d_gradient_matches_d_exact():
    Z = unit_rows(40, 6, 3)
    p1 = frank_wolfe(Z, mode="D-exact", n_iter=200, tol=0)
    p2 = frank_wolfe(Z, mode="D-gradient", n_iter=200, tol=0)
    assert np.allclose(p1, p2, atol=1e-5)


def test_wynn_converges():
    Z = unit_rows(60, 8, 4)
    gs = [g_value(Z, wynn(Z, n_iter=n, tol=0)) for n in (10, 100, 3000)]
    assert gs[0] > gs[1] > gs[2]
    assert gs[2] < 8 * 1.01


def test_kumar_yildirim_start_spans_and_converges():
    Z = unit_rows(100, 7, 5)
    pi0 = kumar_yildirim_init(Z)
    assert 7 <= np.count_nonzero(pi0) <= 14
    assert np.isfinite(g_value(Z, pi0))
    pi = frank_wolfe(Z, init="kumar-yildirim", n_iter=20000, tol=1e-3)
    assert g_value(Z, pi) <= 7 * 1.0011


def test_rank_deficient_and_one_dimensional():
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 9))  # rank 3 in R^9
    pi = frank_wolfe(Z, n_iter=5000)
    assert g_value(Z, pi) <= 3 * 1.0011
    z1 = np.array([[1.0], [-3.0], [2.0]])
    assert np.argmax(frank_wolfe(z1)) == 1 and g_value(z1, frank_wolfe(z1)) == pytest.approx(1.0)


def test_variances_singular_design_is_inf():
    Z = np.eye(3)
    assert np.isinf(variances(Z, [1, 1, 0])).all()
    assert np.allclose(variances(Z, [1, 1, 1]), 3.0)


def brute_force_greedy_step(Z, A):
    best, best_k = np.inf, None
    for k in range(Z.shape[0]):
        Ainv = np.linalg.inv(A + np.outer(Z[k], Z[k]))
        score = np.max(np.einsum("ij,jk,ik->i", Z, Ainv, Z))
        if score < best:
            best, best_k = score, k
    return best_k


def test_greedy_matches_brute_force():
    Z = np.random.default_rng(7).standard_normal((15, 4))
    d = 4
    prev = None
    for n in range(d, d + 6):
        counts = greedy_g_allocation(Z, n, rng=0)
        assert counts.sum() == n
        if prev is not None:
            A = (Z.T * prev) @ Z
            k = brute_force_greedy_step(Z, A)
            assert np.array_equal(counts - prev, np.eye(15, dtype=int)[k])
        prev = counts
    # the start is a linearly independent subset of size d
    assert np.linalg.matrix_rank(Z[greedy_g_allocation(Z, d) > 0]) == d


def test_greedy_small_budget_and_quality():
    Z = np.random.default_rng(8).standard_normal((30, 6))
    assert greedy_g_allocation(Z, 3, rng=1).sum() == 3
    counts = greedy_g_allocation(Z, 600, rng=1)
    # myopic on a nonsmooth criterion: clearly better than uniform, but not optimal (d = 6)
    assert 6 < g_value(Z, counts / 600) < 0.9 * g_value(Z, np.ones(30))
    Z = np.random.default_rng(8).standard_normal((100, 6))
    assert g_value(Z, greedy_g_allocation(Z, 600, rng=1) / 600) < 0.7 * g_value(Z, np.ones(100))


def test_round_keeps_budget_exact_for_many_designs():
    rng = np.random.default_rng(9)
    for _ in range(300):
        K = int(rng.integers(1, 40))
        pi = rng.dirichlet(np.full(K, rng.uniform(0.05, 3)))
        n = int(rng.integers(0, 200))
        for method in ("efficient", "multinomial"):
            c = round_design(n, pi, method=method, rng=rng)
            assert c.sum() == n and c.min() >= 0 and c.dtype.kind == "i"


def test_round_efficient_is_close_and_handles_small_n():
    pi = np.array([0.5, 0.3, 0.2 - 5e-5, 5e-5])
    c = round_design(10, pi)
    assert np.array_equal(c, [5, 3, 2, 0])  # tiny weight pruned, proportions kept
    c = round_design(2, np.full(6, 1 / 6), rng=0)
    assert c.sum() == 2 and c.max() == 1  # n < support: one pull to each of n arms
    c = round_design(2, [0.1, 0.6, 0.3])
    assert np.array_equal(c, [0, 1, 1])  # the two heaviest
    # efficient rounding of a converged D-exact design is near-optimal (A.2: 10.24 at n = 500)
    Z = unit_rows(50, 10, 0)
    pi = frank_wolfe(Z, n_iter=300, tol=0)
    assert g_value(Z, round_design(500, pi) / 500) < 10.5
    with pytest.raises(ValueError, match="rounding method"):
        round_design(3, [0.5, 0.5], method="bogus")


def test_away_steps_reach_optimum_faster_with_sparse_support():
    Z = np.random.default_rng(10).uniform(-0.5, 0.5, (200, 12))
    p0, i0 = frank_wolfe(Z, n_iter=1000, return_info=True)
    p1, i1 = frank_wolfe(Z, n_iter=1000, return_info=True, away_steps=True)
    assert i1["n_iter"] < 1000 and g_value(Z, p1) <= 12 * 1.0011
    assert g_value(Z, p1) < g_value(Z, p0)
    assert np.count_nonzero(p1) < np.count_nonzero(p0)
    assert p1.min() >= 0 and abs(p1.sum() - 1) < 1e-12


def test_spread_order_hands_out_every_prefix_in_the_allocation_s_proportions():
    """Arm k's tests spread through the order: after any t tests, arm k has within 1/2 + s n_k / (2 N) of its share
    t n_k / N (s arms tested, N tests); arm after arm (np.repeat) is off by up to n_k for the first arm."""
    counts = np.array([0, 1626, 918, 0, 1191, 478, 3, 1, 870])
    order = spread_order(counts)
    assert np.array_equal(np.sort(order), np.repeat(np.arange(counts.size), counts))
    N, s = counts.sum(), np.count_nonzero(counts)
    seen = np.cumsum(order[:, None] == np.arange(counts.size)[None, :], axis=0)  # per prefix, per arm
    share = np.arange(1, N + 1)[:, None] * counts[None, :] / N
    assert np.all(np.abs(seen - share) <= 0.5 + s * counts / (2 * N) + 1e-9)
    assert set(order[:20].tolist()) == {1, 2, 4, 5, 8}  # one plate of 20 holds every arm with >= 1/20 of the tests
    assert np.array_equal(spread_order(counts), order) and spread_order(np.zeros(3, dtype=int)).size == 0


def test_spread_order_ranked_gives_each_test_its_rank_within_its_arm():
    """spread_order_ranked: the same order as spread_order, and j for each test, arm k's j-th test in order, so
    (arm, j) names every test once and test j of arm k sits at (j + 1/2) / counts[k] of the order (RAGE-GLM finds its
    outcomes by it)."""
    counts = np.array([3, 0, 1, 2])
    arm, j = spread_order_ranked(counts)
    assert np.array_equal(arm, spread_order(counts))
    # keys (j + 1/2) / n_k: arm 0 at 1/6, 1/2, 5/6; arm 2 at 1/2; arm 3 at 1/4, 3/4 (ties by arm)
    assert arm.tolist() == [0, 3, 0, 2, 3, 0] and j.tolist() == [0, 0, 1, 0, 1, 2]
    big = np.array([0, 1626, 918, 0, 1191, 478, 3, 1, 870])
    arm, j = spread_order_ranked(big)
    for k in range(big.size):  # within each arm, j counts 0, 1, ... in order
        assert np.array_equal(j[arm == k], np.arange(big[k]))
    empty = spread_order_ranked(np.zeros(3, dtype=int))
    assert empty[0].size == 0 and empty[1].size == 0
