"""The order of a block's tests under lin-tas and log-tas: every prefix of a block follows the block's counts
(numerics.design.spread_order), so the plates a block is handed out over each hold its compounds in about its
proportions. The blocks used to be handed out arm after arm (``np.repeat(np.arange(K), counts)``): a plate effect
fell on one compound, and a campaign stopped mid-block had tested one compound of it."""

from __future__ import annotations

import numpy as np

from screenbai.bandits import policy_for_instance
from screenbai.bandits.sim.generators import kw_synthetic, random_linear
from screenbai.bandits.sim.instance import Environment
from screenbai.bandits.tracking.linear import LinearTrackAndStop


def _log_blocks(monkeypatch) -> list[np.ndarray]:
    """The per-arm counts of every block lin-tas or log-tas opens from now on, in the order opened (a policy may
    open its first block as it is made)."""
    opened: list[np.ndarray] = []
    inner = LinearTrackAndStop._open_block

    def logged(self, counts):
        opened.append(np.asarray(counts, dtype=np.int64).copy())
        inner(self, counts)

    monkeypatch.setattr(LinearTrackAndStop, "_open_block", logged)
    return opened


def _check_prefixes(opened: list[np.ndarray], handed: np.ndarray, cuts) -> tuple[int, int]:
    """The tests handed out, cut into the blocks in the order opened (a block is opened when the last is spent):
    each block's tests are its counts, and after each plate (``cuts``: the tests handed out at each plate's end)
    arm k of a block of N tests over s arms is within 1/2 + s n_k / (2 N) of its share t n_k / N. Returns the
    number of (block, plate end) prefixes checked inside blocks of two arms or more, and of those the old order
    (arm after arm) would have failed."""
    checked = failed_old = 0
    start = 0
    for counts in opened:
        N, s = int(counts.sum()), np.count_nonzero(counts)
        part = handed[start : start + N]
        if part.size == N:
            assert np.array_equal(np.bincount(part, minlength=counts.size), counts)
        bound = 0.5 + s * counts / (2.0 * N) + 1e-9
        old = np.repeat(np.arange(counts.size), counts)
        for end in cuts:
            t = end - start
            if 0 < t < N and t <= part.size:
                seen = np.bincount(part[:t], minlength=counts.size)
                assert np.all(np.abs(seen - t * counts / N) <= bound), (counts, t, seen)
                if s >= 2:
                    checked += 1
                    failed_old += bool(
                        np.any(np.abs(np.bincount(old[:t], minlength=counts.size) - t * counts / N) > bound)
                    )
        start += N
    return checked, failed_old


def test_every_plate_prefix_of_a_block_follows_the_block_under_lin_tas_and_log_tas(monkeypatch):
    """Plates of 20 told as they come, on a logistic (log-tas, K = 50, d = 5, the first 600 tests) and a linear
    instance (lin-tas, K = 40, d = 6, sigma = 4, the first 1 000 tests). Arm after arm failed 26 of 26 (log-tas) and
    41 of 48 (lin-tas) of these prefixes at seed 0; a lin-tas block of 63 tests over 10 compounds (seed 1) went out
    on plates of 2, 3, 4 and 3 compounds (now 6, 10, 6, 3)."""
    cases = (
        ("log-tas", kw_synthetic(K=50, d=5, seed=0), {}, 600),
        ("lin-tas", random_linear(K=40, d=6, sigma=4.0, seed=0), {"epsilon": 0.0}, 1000),
    )
    for name, inst, params, cap in cases:
        for seed in (0, 1):
            opened = _log_blocks(monkeypatch)
            p = policy_for_instance(name, inst, rng=np.random.default_rng(seed), **params)
            env = Environment(inst, rng=np.random.default_rng(seed + 5))
            plates: list[np.ndarray] = []
            while not p.done and sum(map(len, plates)) < cap:
                plate = p.propose(20)
                if not plate.size:
                    break
                plates.append(plate)
                p.tell(plate, env.pull(plate))
            handed = np.concatenate(plates)
            checked, failed_old = _check_prefixes(opened, handed, np.cumsum([len(q) for q in plates]))
            assert checked >= 10 and failed_old >= checked // 2, (name, seed, checked, failed_old)


def test_a_campaign_s_plates_follow_the_block_under_lin_tas_and_log_tas(tmp_path):
    """A small campaign (K = 30, d = 4 + the constant feature, plates of 20, outcomes recorded plate by plate): after
    every plate, the part of the current block handed out (its counts less the rest still queued) is within
    spread_order's bound of its share, and a plate inside a block of several compounds holds several. Arm after arm
    failed every such prefix (log-tas: 5 and 4 plates of seeds 0 and 3 inside a block; lin-tas: 10 and 10), and
    log-tas's second plate already (seed 0)."""
    from campaign_util import Assay, new_campaign, write_results

    for algorithm in ("log-tas", "lin-tas"):
        for seed in (0, 3):
            camp = new_campaign(
                tmp_path / f"{algorithm}{seed}.campaign",
                algorithm,
                {"epsilon": 0.02, "delta": 0.05},
                K=30,
                d=4,
                seed=seed,
            )
            assay = Assay(camp.features, seed=seed + 10)
            checked = failed_old = 0
            for k in range(40):
                if camp.policy.done:
                    break
                plate = camp.next_plate(20)
                p = camp.policy
                inner = getattr(p, "inner", p)
                rest = np.concatenate([inner._queue, getattr(inner, "_plan", inner._queue[:0])])
                counts = inner._whole(inner._open[-1], "planned")
                seen = counts - np.bincount(rest, minlength=camp.K)
                N, s, t = int(counts.sum()), np.count_nonzero(counts), int(seen.sum())
                bound = 0.5 + s * counts / (2.0 * N) + 1e-9
                assert np.all(np.abs(seen - t * counts / N) <= bound), (algorithm, seed, k, counts, seen)
                if s >= 2 and 20 <= t < N:
                    arms = np.asarray(plate.arms)
                    assert np.unique(arms).size >= 2, (algorithm, seed, k, counts)
                    checked += 1
                    old = np.bincount(np.repeat(np.arange(camp.K), counts)[:t], minlength=camp.K)
                    failed_old += bool(np.any(np.abs(old - t * counts / N) > bound))
                camp.record(write_results(tmp_path / f"r{algorithm}{seed}_{k}.csv", plate, assay(plate.arms)))
            camp.close()
            assert checked >= 4 and failed_old == checked, (algorithm, seed, checked, failed_old)
