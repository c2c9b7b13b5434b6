"""argmax, argmin and top-m with ties broken uniformly at random; and the k largest in a fixed order.

Symmetric benchmark instances (canonical bases, equal gaps) tie exactly; a fixed order would bias
every such run towards low arm indices.  The generator is consulted only when there is a tie, so
untied choices never consume random numbers.
"""

from __future__ import annotations

import numpy as np


def argmax_random(values: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the maximum, ties broken uniformly at random."""
    i = int(values.argmax())
    if np.count_nonzero(values == values[i]) == 1:
        return i
    ties = np.flatnonzero(values == values[i])
    return int(ties[rng.integers(ties.size)])


def argmin_random(values: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the minimum, ties broken uniformly at random."""
    return argmax_random(-values, rng)


def top_m(values: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """The m indices with the largest values (sorted), ties at the boundary broken at random."""
    if m == 1:
        return np.array([argmax_random(values, rng)])
    K = values.size
    idx = np.argpartition(values, K - m)[K - m :]
    kth = values[idx].min()
    if np.count_nonzero(values >= kth) == m:  # no tie at the boundary: the common case, no sort of K
        idx.sort()
        return idx
    above = np.flatnonzero(values > kth)
    at = np.flatnonzero(values == kth)
    at = rng.choice(at, size=m - above.size, replace=False)
    return np.sort(np.concatenate([above, at]))


def top_m_preferring(values: np.ndarray, prefer: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """``top_m`` with ties in ``values`` broken first by the larger ``prefer``, then at random. With ``prefer`` the
    tests made: of compounds with the same features (stereoisomers: the same mean under any model of them) the one
    with evidence leads, not an untested twin. The generator is consulted only for ties in both."""
    K = values.size
    idx = np.argpartition(values, K - m)[K - m:]
    kth = values[idx].min()
    above = np.flatnonzero(values > kth)
    at = np.flatnonzero(values == kth)
    r = m - above.size
    if at.size == r:  # no tie at the boundary: the common case
        return np.sort(np.concatenate([above, at]))
    p = prefer[at]
    pk = np.sort(p)[::-1][r - 1]  # the r-th largest preference among the tied
    sure, tied = at[p > pk], at[p == pk]
    pick = tied if tied.size == r - sure.size else rng.choice(tied, size=r - sure.size, replace=False)
    return np.sort(np.concatenate([above, sure, pick]))


class BlockArgmax:
    """``argmax_random`` over a vector computed block by block, each block examined while it is in
    cache (one sweep over memory instead of two more reads of the whole vector).

    ``add`` the blocks (consecutive ones, or any order with their offsets), then ``result(values,
    rng)`` with the whole vector: the same index and the same use of ``rng`` as
    ``argmax_random(values, rng)``. Ties are counted at the end, in the blocks holding the maximum
    only (usually one), not in every block; with a tie, only the blocks holding the maximum are read again.
    """

    def __init__(self):
        self.best = -np.inf
        self.index = -1
        self.at: list[tuple[int, int]] = []  # [start, end) of the blocks whose maximum is ``best``
        self.offset = 0

    def add(self, block: np.ndarray, offset: int | None = None) -> None:
        start = self.offset if offset is None else offset
        k = int(block.argmax())
        v = block[k]
        end = start + block.size
        if v > self.best or self.index < 0:
            self.best, self.index, self.at = v, start + k, [(start, end)]
        elif v == self.best:
            self.at.append((start, end))
            self.index = min(self.index, start + k)  # the first maximum, as argmax
        self.offset = end

    def result(self, values: np.ndarray, rng: np.random.Generator) -> int:
        if len(self.at) == 1:  # else two blocks hold the maximum: a tie
            s, e = self.at[0]
            if np.count_nonzero(values[s:e] == self.best) == 1:
                return self.index
        # a tie: every maximum lies in a block of ``at``, so the tied indices are found there, in index
        # order, and drawn from as argmax_random draws from its (same) list
        ties = np.concatenate([s + np.flatnonzero(values[s:e] == self.best) for s, e in sorted(self.at)])
        return int(ties[rng.integers(ties.size)])


def swap_to_twin(values: np.ndarray, w: int, i: int) -> BlockArgmax:
    """``values`` computed against arm w (-inf at w) turned into the same values against arm i, a twin of w
    (see ``RidgeState.is_twin``: the same features, with the same bits in every input of the values, so
    that the value of i against w equals, bit for bit, that of w against i): the two entries swapped,
    in place, and the argmax found again over the whole vector (one read instead of recomputing it)."""
    values[w], values[i] = values[i], -np.inf
    best = BlockArgmax()
    best.add(values, 0)
    return best


def largest_first(score: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, largest first, ties by position (a fixed order, not at random):
    the first ``k`` of ``np.argsort(-score, kind="stable")`` without sorting all of them (O(n) + O(k log k))."""
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if score.size <= k:
        return np.argsort(-score, kind="stable")
    kth = np.partition(score, score.size - k)[score.size - k]  # the k-th largest
    top = np.flatnonzero(score >= kth)  # ascending positions: a stable sort keeps ties in this order
    return top[np.argsort(-score[top], kind="stable")][:k]
