"""A small least-recently-used cache for reward-independent computations (optimal designs, static
allocation sequences) that Monte-Carlo replications of a study share, keyed by array digests."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import numpy as np

V = TypeVar("V")


def digest(*arrays) -> str:
    """A digest of the arrays' dtypes, shapes and contents."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


class LRUCache(Generic[V]):
    """At most ``maxsize`` entries; ``get(key, make)`` returns the cached value or stores ``make()``."""

    def __init__(self, maxsize: int):
        self.maxsize = int(maxsize)
        self._data: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        value = self._data.get(key)
        if value is None:
            value = self._data[key] = make()
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        else:
            self._data.move_to_end(key)
        return value

    def clear(self) -> None:
        self._data.clear()

    def items(self) -> dict[Hashable, V]:
        return dict(self._data)

    def update(self, entries: dict[Hashable, V]) -> None:
        for key, value in entries.items():
            self._data[key] = value
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)
