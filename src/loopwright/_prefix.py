"""Whether a conversation still begins with the messages seen at its last request.

The checks that let a step do only its new work (a text protocol resuming its rendering,
the transcript recording only a model call's new input) compare the history they kept
with the one they are given. :func:`starts_with` compares the kept list's objects with
the given list's, pointer by pointer in C, without copying the given list's prefix: the
few new items are appended to the kept list for the comparison and removed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["starts_with"]

T = TypeVar("T")


def starts_with(items: Sequence[T], prefix: list[T]) -> bool:
    """Whether ``items`` begins with ``prefix``: the same objects in the same places
    (compared as list equality compares, identity first; the last must be the very same
    object). ``prefix`` is the caller's own list: it is extended for the comparison and
    cut back before returning, so no other thread may use it meanwhile."""
    n = len(prefix)
    if len(items) < n or (n and items[n - 1] is not prefix[-1]):
        return False
    if not isinstance(items, list):
        return list(items[:n]) == prefix
    prefix += items[n:]  # only the new items: the comparison is then of whole lists
    try:
        return prefix == items
    finally:
        del prefix[n:]
