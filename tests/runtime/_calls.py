"""The calls a test tool really made (kept in a module of its own, so that what the
list holds is not part of the tool's version: a tool's version counts the values of
its own module it uses, and other modules by name)."""

from __future__ import annotations

CALLS: list[tuple[int, int]] = []


def note(a: int, b: int) -> None:
    CALLS.append((a, b))
