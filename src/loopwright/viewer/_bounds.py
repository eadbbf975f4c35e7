"""What one item of a page may weigh: a value from a run cut to a bounded size.

A run holds what models, tools and datasets sent, whole: a model's 50 MB answer, an info
entry of one 1 MB line, a store value of a million keys, JSON nested hundreds of levels.
A page sends each item (an event, a message, a run's row, a sample, a store) through a
:class:`Cut`: long strings lose their middle, long lists and objects their tail, deep
nesting its depth, and once the item's budget is spent the rest is a marker. The item
then says it was cut, and the whole of it is a download of its own.
"""

from __future__ import annotations

import math
from typing import Any

from .._terminal import cut_middle

__all__ = ["BUDGET", "MAX_ITEMS", "MAX_NEST", "MAX_TEXT", "Cut", "finite"]

MAX_TEXT = 10_000
"""The most characters of one string sent (the middle is cut)."""
MAX_ITEMS = 500
"""The most items of one list or object sent (the rest are left out)."""
MAX_NEST = 32
"""The most levels of lists and objects sent (deeper ones are a marker)."""
BUDGET = 60_000
"""About the most characters one item (an event, a message...) is sent as."""
_MARK = "\n[... {cut} characters not shown ...]\n"
_ITEM = 8  # what an item of a list or object costs of the budget, beyond its strings
_LATE_KEYS = 32
_MAX_KEY = 200


class Cut:
    """Cuts values to the bounds above, an item at a time (one budget per instance);
    :attr:`cut` says whether anything was left out. A value keeps its type (a list
    stays a list, an object an object, with a marker in it): the page reads it the same."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.left = budget
        self.cut = False

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, (bool, int)) or value is None:
            self.left -= _ITEM
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else None  # (JSON has no NaN)
        if isinstance(value, dict):
            if self._full(depth, len(value)):
                return {"[...]": f"[... an object of {len(value)} keys not shown ...]"}
            out: dict[str, Any] = {}
            late = 0  # keys after the budget was spent: kept (with their values as
            # markers of their type) so the object keeps its shape, a few
            for i, (k, v) in enumerate(value.items()):
                late += self.left <= 0
                if i == MAX_ITEMS or late > _LATE_KEYS:
                    self.cut = True
                    out["[...]"] = f"[... {len(value) - i} more keys not shown ...]"
                    break
                self.left -= _ITEM
                key = str(k)
                if len(key) > _MAX_KEY:
                    self.cut, key = True, key[:_MAX_KEY] + "[...]"
                out[key] = self(v, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            if self._full(depth, len(value)):
                return [f"[... a list of {len(value)} items not shown ...]"]
            items: list[Any] = []
            for i, v in enumerate(value):
                if i == MAX_ITEMS or self.left <= 0:
                    self.cut = True
                    items.append(f"[... {len(value) - i} more items not shown ...]")
                    break
                self.left -= _ITEM
                items.append(self(v, depth + 1))
            return items
        return value

    def _full(self, depth: int, size: int) -> bool:
        if size and (depth >= MAX_NEST or self.left <= 0):
            self.cut = True
            return True
        return False

    def _text(self, text: str) -> str:
        limit = max(0, min(MAX_TEXT, self.left))
        if len(text) > limit:
            self.cut = True
            text = (
                cut_middle(text, limit, marker=_MARK)
                if limit
                else _MARK.format(cut=len(text)).strip()
            )
        self.left -= len(text)
        return text


def finite(value: Any) -> Any:
    """``value`` with its non-finite floats (which a run store may hold; JSON has none)
    as ``None``, nothing cut."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
