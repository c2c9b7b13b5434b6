"""The vectorised eq. 11 test of the static allocations holds at most ``FAST_PATH_MAX_BYTES`` at once,
tests the data states in chunks, and finds the same stopping state whatever the chunk size."""

import tracemalloc

import numpy as np
import pytest

from screenbai.bandits.linear import static_rules
from screenbai.bandits.linear.static_rules import (
    FAST_PATH_MAX_BYTES,
    fast_path_bytes,
    first_eq11_stop,
    states_per_chunk,
)
from screenbai.bandits.numerics.linalg import MAX_K_QUADRATIC


def test_largest_k_stays_under_the_cap():
    K, d, block = MAX_K_QUADRATIC, 20, 4096  # 16 384 arms, the most a static allocation accepts
    B = states_per_chunk(K, d)
    assert 1 <= B < block
    assert fast_path_bytes(K, d) <= FAST_PATH_MAX_BYTES == 256 * 2**20
    assert block * d * K * 8 > 39 * FAST_PATH_MAX_BYTES  # what one (4096, d, K) array would take: 10.7 GB
    for d in (1, 5, 50, 200):
        assert fast_path_bytes(K, d) <= FAST_PATH_MAX_BYTES


def _block(K=300, d=5, n=4096, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((K, d))
    theta = scale * rng.standard_normal(d)
    counts = np.full(K, 2.0)
    sums = 2.0 * (Z @ theta) + rng.standard_normal(K)
    arms = rng.integers(K, size=n)
    rewards = Z[arms] @ theta + rng.standard_normal(n)
    return Z, counts, sums, arms, rewards


@pytest.mark.parametrize("cap", [2 * 2**20, 8 * 2**20])
def test_measured_peak_is_under_the_cap(monkeypatch, cap):
    monkeypatch.setattr(static_rules, "FAST_PATH_MAX_BYTES", cap)
    Z, counts, sums, arms, rewards = _block()
    K, d = Z.shape
    assert states_per_chunk(K, d) < 4096 // 8  # the block is tested in many chunks
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        hit = first_eq11_stop(Z, counts, sums, arms, rewards, 2 * K, 0, 10**9, 1e3, K, 0.05)  # c = 1e3: no stop
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert hit is None
    assert peak <= fast_path_bytes(K, d) <= cap, (peak, fast_path_bytes(K, d), cap)
    assert peak > cap / 4  # the chunks use the room they are given (the accounting is not vacuous)


def test_chunk_size_does_not_change_the_answer(monkeypatch):
    Z, counts, sums, arms, rewards = _block(K=40, d=4, n=4096, seed=3, scale=2.0)
    K = Z.shape[0]
    c = 1.0  # eq. 11 first holds 612 pulls into the block
    whole = first_eq11_stop(Z, counts.copy(), sums.copy(), arms, rewards, 2 * K, 0, 10**9, c, K, 0.05)
    assert whole is not None and 2 * K + 100 < whole[0] < 2 * K + 4096
    for cap in (40_000, 300_000):
        monkeypatch.setattr(static_rules, "FAST_PATH_MAX_BYTES", cap)
        assert states_per_chunk(K, 4) < whole[0] - 2 * K
        part = first_eq11_stop(Z, counts.copy(), sums.copy(), arms, rewards, 2 * K, 0, 10**9, c, K, 0.05)
        assert part[:2] == whole[:2]
        np.testing.assert_array_equal(part[2], whole[2])
        np.testing.assert_array_equal(part[3], whole[3])
    # the totals after a block without a stop are the same as one accumulation
    left_n, left_s = counts.copy(), sums.copy()
    assert first_eq11_stop(Z, left_n, left_s, arms, rewards, 2 * K, 0, 10**9, 1e3, K, 0.05) is None
    np.add.at(counts, arms, 1)
    np.add.at(sums, arms, rewards)
    np.testing.assert_array_equal(left_n, counts)
    np.testing.assert_array_equal(left_s, sums)


def test_elimination_by_blocks_of_rows(monkeypatch):
    """eq. 16's elimination taken by blocks of rows (a small cap: blocks of 3 arms) finds the arms the whole
    K x K comparison finds, and asks the widths only for rows of the block size."""
    rng = np.random.default_rng(4)
    K = 50
    mu = rng.standard_normal(K)
    W = np.abs(rng.standard_normal((K, K)))
    whole = ((mu[None, :] - mu[:, None]) > W).any(axis=1)
    assert 0 < whole.sum() < K
    sizes = []

    def widths(rows):
        sizes.append(rows.size)
        return W[rows]

    monkeypatch.setattr(static_rules, "FAST_PATH_MAX_BYTES", 4 * 8 * K * 3)
    np.testing.assert_array_equal(static_rules.beaten(mu, widths), whole)
    assert max(sizes) == 3 and sum(sizes) == K
