"""The likelihood-ratio set restarted late (screenbai/bandits/numerics/lr_windows.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits.numerics import lr_windows
from screenbai.bandits.numerics.lr_windows import LRWindows


def _drive(K=12, d=3, batches=60, seed=0):
    """Random batches told to LRWindows as a policy tells them; returns the windows and the batch log."""
    rng = np.random.default_rng(seed)
    win = LRWindows(d, K)
    n, sums, pred_loss, t = np.zeros(K, dtype=np.int64), np.zeros(K), 0.0, 0
    log = []
    for _ in range(batches):
        arms = rng.integers(0, K, size=int(rng.integers(1, 9)))
        rewards = rng.integers(0, 2, size=arms.size).astype(float)
        losses = rng.uniform(0.1, 2.0, size=arms.size)
        np.add.at(n, arms, 1)
        np.add.at(sums, arms, rewards)
        win.before_batch(t, n, sums, arms, rewards, pred_loss)
        log.append((t, arms, rewards, losses))
        pred_loss += float(losses.sum())
        t += arms.size
    return win, log, n, sums, pred_loss, t


def test_each_window_holds_exactly_the_outcomes_after_its_start():
    win, log, n, sums, pred_loss, t = _drive()
    starts = [math.ceil(3 * lr_windows.RATIO**b) for b in range(1, lr_windows.COUNT)]
    seen = 0
    for start, n_w, s_w, p_w, log_inv in win.windows(n, sums, pred_loss, t):
        after = [(a, r, q) for (t0, a, r, q) in log if t0 >= start]
        want_n = np.bincount(np.concatenate([a for a, _, _ in after]), minlength=n.size)
        want_s = np.bincount(np.concatenate([a for a, _, _ in after]), weights=np.concatenate([r for _, r, _ in after]),
                             minlength=n.size)
        np.testing.assert_array_equal(n_w, want_n)
        np.testing.assert_allclose(s_w, want_s)
        assert p_w == pytest.approx(sum(float(q.sum()) for _, _, q in after))
        if start:
            # a late window opens at the first batch boundary at or after its planned start
            planned = [s for s in starts if s <= start]
            assert planned and start == min(t0 for (t0, *_rest) in log if t0 >= planned[-1])
            assert start <= lr_windows.LATEST * t
        else:
            assert log_inv == pytest.approx(math.log(1.0 / lr_windows.FULL_WEIGHT))
        seen += 1
    assert 2 <= seen <= 1 + lr_windows.RECENT


def test_the_weights_of_all_planned_windows_sum_to_one():
    # windows opened together share one snapshot and carry the sum of their weights
    win, *_ = _drive(batches=200)
    late = sum(math.exp(-w[5]) for w in win.snapshots)
    planned_open = win.opened * (1.0 - lr_windows.FULL_WEIGHT) / (lr_windows.COUNT - 1)
    assert late == pytest.approx(planned_open)
    assert lr_windows.FULL_WEIGHT + (1.0 - lr_windows.FULL_WEIGHT) <= 1.0 + 1e-12


def test_state_round_trip_keeps_the_windows():
    win, log, n, sums, pred_loss, t = _drive(seed=3)
    copy = LRWindows(3, 12)
    copy.load_state_dict(win.state_dict())
    a = list(win.windows(n, sums, pred_loss, t))
    b = list(copy.windows(n, sums, pred_loss, t))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x[0] == y[0] and x[3] == y[3] and x[4] == y[4]
        np.testing.assert_array_equal(x[1], y[1])
        np.testing.assert_array_equal(x[2], y[2])


def test_memory_is_sparse_in_the_arms():
    win, *_ = _drive(K=100_000, batches=40)
    assert all(w[1].size <= w[0] for w in win.snapshots)  # at most one entry per test before the start


@pytest.mark.slow
def test_log_tas_stops_earlier_with_late_windows(monkeypatch):
    """On a d = 8 instance (where the early predictions' regret is large) no run stops later with the late windows
    than with the full window alone, and runs that stop earlier are stopped by a late window. (Which runs gain
    depends on the order of a block's tests: with arm after arm both seeds 0 and 1 did; in spread order seeds 2 and 3
    of 0-3 do.)"""
    from screenbai.bandits.sim.generators import kw_synthetic
    from screenbai.bandits.sim.instance import Environment
    from screenbai.bandits.tracking.logistic import LogisticTrackAndStop

    inst = kw_synthetic(K=20, d=8, seed=1)

    def run(rep):
        p = LogisticTrackAndStop(inst.features, rng=rep, delta=0.05, epsilon=0.1)
        r = p.run(Environment(inst, rng=np.random.default_rng(rep)))
        assert r.stopped
        return r.n_samples, p.diagnostics["window_start"]

    reps = range(4)
    windowed = [run(rep) for rep in reps]
    monkeypatch.setattr(lr_windows, "RECENT", 0)
    full = [run(rep) for rep in reps]
    assert all(start == 0 for _, start in full)
    pairs = list(zip(windowed, full, strict=True))
    assert all(w <= f for (w, _), (f, _) in pairs), pairs
    earlier = [start for (w, start), (f, _) in pairs if w < f]
    assert len(earlier) >= 2 and all(start > 0 for start in earlier), pairs


def test_without_late_windows_the_full_window_has_the_whole_weight():
    win = LRWindows(2, 12, late=False)
    n, sums = np.zeros(12, dtype=np.int64), np.zeros(12)
    for t in range(0, 400, 4):
        arms = np.arange(4) + t % 8
        np.add.at(n, arms, 1)
        win.before_batch(t, n, sums, arms, np.zeros(4), 0.0)
    windows = list(win.windows(n, sums, 1.0, 400))
    assert len(windows) == 1 and windows[0][0] == 0 and windows[0][4] == 0.0  # log(1/1): lr_set's own level


def test_a_check_tries_every_late_window_that_opened_before_latest_t():
    """Old windows certify too (kw_synthetic d = 5 seed 2: the 8th and 9th most recent, docs/lower_bound.md):
    the windows tried are the full one and every late window opened by LATEST t, not only the latest few."""
    win, _, n, sums, pred_loss, t = _drive(batches=200)
    opened_early = [w[0] for w in win.snapshots if w[0] <= lr_windows.LATEST * t]
    assert len(opened_early) > 6
    tried = [start for start, *_ in win.windows(n, sums, pred_loss, t)]
    assert tried == [0, *sorted(opened_early, reverse=True)]
