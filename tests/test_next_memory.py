"""What `next` holds in memory at K = 1.58 M (docs/scale.md, "Session 26"): its peak was 3.2 GB, of it a pivoted QR
holding three copies of the K x d features, the greedy block's directions computed (and held through the T* solve)
where the greedy block was unaffordable, the directions divided into a second K x d array, and the policy's own copy
of the campaign's features. Checked by allocation sizes and call counts on small inputs, not timings; that nothing
else changes, by tests/test_policy_records.py and tests/test_static_records.py."""

from __future__ import annotations

import tracemalloc

import numpy as np
from campaign_util import new_campaign
from scipy.linalg import get_lapack_funcs, qr

from screenbai.bandits import make_policy
from screenbai.bandits.certainty import local_form
from screenbai.bandits.numerics.linalg import spanning_arms
from screenbai.bandits.tracking import linear
from screenbai.bandits.tracking.logistic import LogisticTrackAndStop


def test_spanning_arms_takes_scipys_pivots_on_one_copy_of_the_features():
    """scipy's qr(pivoting=True) held its work-size query's copy of the input with the call's own, then built R:
    3.7 copies of Z at its peak (1.24 GB at K = 1.58 M). The same LAPACK call on one copy: the same pivots."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((3000, 7))
    tied = np.vstack([base[:50]] * 4)  # repeated rows: pivots decided among equal norms
    low = base[:, :3] @ rng.standard_normal((3, 7))  # rank 3 of 7
    for Z in (base, tied, low, np.ascontiguousarray(base[:, :1])):
        _, _, piv = qr(Z.T, mode="economic", pivoting=True)
        assert np.array_equal(spanning_arms(Z, pivot_order=True), piv[: Z.shape[1]])
        assert np.array_equal(spanning_arms(Z), np.sort(piv[: Z.shape[1]]))
    Z = rng.standard_normal((100_000, 21))
    (geqp3,) = get_lapack_funcs(("geqp3",), (Z.T,))
    work = 8 * int(geqp3(Z.T, lwork=-1, overwrite_a=True)[-2][0].real)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        spanning_arms(Z)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak <= Z.nbytes + work + 16 * Z.shape[0]  # one copy, LAPACK's work array, the pivots (was 3.7 copies)


def test_a_block_too_large_for_the_greedy_design_does_not_compute_its_directions(monkeypatch):
    """At K = 1.58 M every log-tas block computed the greedy block's directions and design features (two K x d
    arrays) before finding the greedy block unaffordable, and held them through its T* solve."""
    rng = np.random.default_rng(1)
    X = np.hstack([rng.standard_normal((400, 11)), np.ones((400, 1))])  # d = 12 > PLUGIN_D: the greedy design
    calls: list = []
    needs = LogisticTrackAndStop._needs
    monkeypatch.setattr(LogisticTrackAndStop, "_needs", lambda self, *a: calls.append(1) or needs(self, *a))
    truth = 1 / (1 + np.exp(-(X @ (0.2 * rng.standard_normal(12)))))

    def blocks(policy, n):
        for _ in range(n):
            assert not policy.done
            arms = np.asarray(policy.propose(60)).reshape(-1)
            policy.tell(arms, (rng.random(arms.size) < truth[arms]).astype(float))

    blocks(make_policy("log-tas", X, rng=2, epsilon=0.01, delta=0.05), 4)
    assert calls  # affordable here: the greedy blocks
    calls.clear()
    monkeypatch.setattr(linear, "_GREEDY_WORK", 1000.0)  # as at K = 1.58 M: never affordable
    policy = make_policy("log-tas", X, rng=2, epsilon=0.01, delta=0.05)
    blocks(policy, 4)
    assert policy.diagnostics["blocks"] >= 3 and not calls


def test_the_solver_divides_the_directions_in_place_with_the_same_numbers():
    """``_minimax`` kept y_p and y_p / g_p side by side (two K x d arrays); the solve of ``characteristic_time`` now
    spends its pairs' directions: the same allocation and bounds to the bit."""
    rng = np.random.default_rng(3)
    X = np.hstack([rng.standard_normal((500, 5)), np.ones((500, 1))])
    theta = rng.standard_normal(6)
    mdl = local_form._Model(X, theta, "logistic", 1.0)
    answer = (int(np.argmax(mdl.value)),)
    kept, spent = local_form._Pairs(mdl, 0.1, answer), local_form._Pairs(mdl, 0.1, answer)
    a = local_form._minimax(kept, 1e-3, 2000)
    b = local_form._minimax(spent, 1e-3, 2000, spend=True)
    assert spent.Y is None and kept.Y is not None
    for x, y in zip(a, b):
        assert np.array_equal(np.asarray(x), np.asarray(y))


def test_the_policy_reads_the_campaigns_features_not_a_copy(tmp_path):
    """The policy took ``features[active]``, a copy of the library's features (266 MB at K = 1.58 M) where every
    compound is active; now the campaign's own array, read-only (a write into it fails loudly)."""
    camp = new_campaign(tmp_path / "f.campaign", algorithm="log-tas", params={"epsilon": 0.1, "delta": 0.05}, K=40)
    try:
        X = camp.policy.inner.X
        assert np.shares_memory(X, camp.features) and not X.flags.writeable
        assert np.array_equal(camp._features_of(np.arange(1, 40)), camp.features[1:])  # a subset: its rows
        assert not np.shares_memory(camp._features_of(np.arange(1, 40)), camp.features)
    finally:
        camp.close()
