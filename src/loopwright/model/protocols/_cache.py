"""A bounded map for renderings cached by message id, cheap to read on every step.

Reads are one dict lookup and a flag write (no lock, no reordering), so walking a long
history costs little. When full, entries leave in insertion order, except that an entry
read since it was last considered gets a second chance (the "clock" policy): the
messages a running conversation keeps sending are kept.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``size`` entries; recently read entries are evicted last."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._data: dict[K, list[V | bool]] = {}
        self._lock = threading.Lock()  # for writers; readers need none

    def get(self, key: K) -> V | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        entry[1] = True
        return entry[0]  # type: ignore[return-value]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            data = self._data
            data.pop(key, None)
            data[key] = [value, False]
            while len(data) > self.size:
                oldest = next(iter(data))
                entry = data.pop(oldest)
                if entry[1]:  # read since: a second chance, at the back
                    entry[1] = False
                    data[oldest] = entry

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
