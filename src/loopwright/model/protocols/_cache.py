"""A bounded map for renderings cached by message id, cheap to read on every step, and
the checkpoints (:class:`Cursor`) a text protocol resumes a conversation's rendering from.

Reads are one dict lookup and a flag write (no lock, no reordering), so walking a long
history costs little. When full, entries leave in insertion order, except that an entry
read since it was last considered gets a second chance (the "clock" policy): the
messages a running conversation keeps sending are kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._chat import ChatMessage

__all__ = ["CURSORS_PER_START", "LRU", "Cursor"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``size`` entries, and (with ``weigh``) at most ``max_weight`` of their
    summed weights; recently read entries are evicted last."""

    def __init__(
        self, size: int, *, weigh: Callable[[V], int] | None = None, max_weight: int = 0
    ) -> None:
        self.size = max(1, size)
        self._data: dict[K, list[Any]] = {}  # key -> [value, read since, weight]
        self._weigh, self._max_weight, self._weight = weigh, max_weight, 0
        self._lock = threading.Lock()  # for writers; readers need none

    def get(self, key: K) -> V | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        entry[1] = True
        value: V = entry[0]
        return value

    def put(self, key: K, value: V) -> None:
        """Store ``value``; older entries leave until the bounds hold again (the new one
        stays, even alone over ``max_weight``)."""
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            data = self._data
            old = data.pop(key, None)
            if old is not None:
                self._weight -= old[2]
            room = self.size - 1
            limit = self._max_weight - weight if self._weigh is not None else None
            chances = len(data)  # at most one second chance each
            while data and (len(data) > room or (limit is not None and self._weight > limit)):
                oldest = next(iter(data))
                entry = data.pop(oldest)
                if entry[1] and chances > 0:  # read since: a second chance, at the back
                    entry[1] = False
                    data[oldest] = entry
                    chances -= 1
                else:
                    self._weight -= entry[2]
            data[key] = [value, False, weight]
            self._weight += weight


@dataclass(slots=True)
class Cursor:
    """A checkpoint of a conversation's rendering, so a later request renders only what
    is new after it. The request that resumes from it extends it in place."""

    src: list[ChatMessage]  # the messages rendered (the same objects)
    n: int
    toolset_key: object
    today: str
    unmerged: list[ChatMessage]
    out: list[ChatMessage]
    tail: int  # index in ``unmerged`` where the source of ``out[-1]`` starts


CURSORS_PER_START = 4
