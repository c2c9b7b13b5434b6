"""Block Track-and-Stop keeps its open blocks (handed out, outcomes not all in) on the blocks' own arms: with three
K-vectors per open block, a campaign's `next` at K = 1.58 M held 59 of them in 2.4 GB (docs/scale.md). The runs
are the same: tests/test_policy_records.py checks lin-tas and log-tas bit for bit; here plates in flight (several
open blocks at once, outcomes back in another order) and a state written with the K-vectors."""

from __future__ import annotations

import numpy as np
import pytest

from screenbai.bandits import make_policy


def _features(K: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.hstack([rng.normal(size=(K, d)), np.ones((K, 1))])


def _policy(algorithm: str, X: np.ndarray):
    params = {"epsilon": 0.01} if algorithm == "log-tas" else {"epsilon": 0.01, "sigma": 0.5}
    return make_policy(algorithm, X, rng=np.random.default_rng(3), **params)


def _outcome(X, theta, arms, rng):
    p = 1.0 / (1.0 + np.exp(-X[arms] @ theta))
    return (rng.random(arms.size) < p).astype(float)


def _plates(pol, X, n_plates: int, size: int, seed: int = 5):
    """Two plates in flight at a time, the older one's outcomes recorded in reverse well order: the outcomes of
    an arm reach the open blocks first-in first-out."""
    theta = 0.1 * np.random.default_rng(seed).normal(size=X.shape[1])  # close arms: no early stop
    rng = np.random.default_rng(seed + 1)
    flight, seen = [pol.propose(size)], []
    for _ in range(n_plates):
        if not pol.done:
            flight.append(pol.propose(size))
            seen.append(max(len(pol._open), 0))
        arms = flight.pop(0)[::-1]
        if arms.size and not pol.done:
            pol.tell(arms, _outcome(X, theta, arms, rng))
    return seen


@pytest.mark.parametrize("algorithm", ["log-tas", "lin-tas"])
def test_open_blocks_hold_their_own_arms_not_k_vectors(algorithm):
    K = 3000
    X = _features(K, 4)
    pol = _policy(algorithm, X)
    seen = _plates(pol, X, 3, 96)
    assert max(seen) >= 2  # several blocks open at once (the multi-block route of the outcomes)
    open_now = pol.propose(96)
    assert open_now.size and pol._open
    for blk in pol._open:
        n_arms = np.unique(blk["arms"]).size
        assert n_arms == blk["arms"].size and n_arms <= blk["planned"].sum() < K  # the block's arms, not K
        for key in ("planned", "got", "sums"):
            assert blk[key].shape == (n_arms,)


@pytest.mark.parametrize("algorithm", ["log-tas", "lin-tas"])
def test_a_state_with_k_vector_blocks_loads_and_runs_on_as_before(algorithm):
    """A snapshot written before (three K-vectors per open block) loads into the same policy state, which then
    proposes and records exactly as the policy that never was saved."""
    K = 400
    X = _features(K, 3, seed=1)
    pol = _policy(algorithm, X)
    _plates(pol, X, 3, 24)
    state = pol.state_dict()
    blocks = state["algorithm_state"]["_open"]
    assert blocks and all("arms" in b for b in blocks)
    old = []
    for b in blocks:  # as the code before wrote them
        whole = {}
        for key in ("planned", "got", "sums"):
            whole[key] = np.zeros(K, dtype=b[key].dtype)
            whole[key][b["arms"]] = b[key]
        old.append(whole)
    state["algorithm_state"]["_open"] = old
    again = _policy(algorithm, X)
    again.load_state_dict(state)
    for a, b in zip(again._open, pol._open):
        assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)
    _plates(pol, X, 4, 24, seed=9)
    _plates(again, X, 4, 24, seed=9)
    assert np.array_equal(pol.n, again.n) and np.array_equal(pol.sums, again.sums)
    assert pol.result().recommendation == again.result().recommendation
