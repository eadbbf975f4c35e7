"""How deeply tool-call arguments may nest: one bound, and its check.

Arguments come from a model, so their shape is untrusted. Everything that walks them
later recurses: pydantic and ``jsonschema`` validating them, ``json`` and pydantic
writing them to the run store, and pydantic reading them back (it refuses JSON nested
about 200 levels deep, and the store wraps arguments in a few levels of its own). So
arguments nested deeper than :data:`MAX_NESTING` are refused before anything else
touches them, by :func:`nesting_exceeds`, which does not recurse:

- the native providers, as they decode a call's arguments (``parse_error`` is set);
- the text protocols, as they read an action's JSON (a format error, or ``parse_error``);
- ``Model.generate``, for every call of every reply (``parse_error`` is set);
- the tool binder, for calls that reach a tool some other way (an error for the model);
- the run store, for such a call that reaches it: it writes the placeholder
  ``Model.generate`` makes (``model._bounds.flat_call``) when the call cannot be written.

Each place says so in its own words, naming the bound.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NESTING", "nesting_exceeds"]

MAX_NESTING = 100
"""The deepest nesting of objects and arrays accepted in tool-call arguments (the
arguments object itself is level 1)."""


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` nests dicts, lists and tuples more than ``limit`` levels deep.

    No recursion, so any depth is safe; the time is linear in the part of ``value`` it
    visits, and it stops at the first container past the limit.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False
