"""Key order of JSON-schema nodes: the most telling keys first."""

from __future__ import annotations

from typing import Any

__all__ = ["ordered"]

_ORDER = {
    k: i
    for i, k in enumerate(
        [
            "type",
            "description",
            "enum",
            "const",
            "anyOf",
            "oneOf",
            "allOf",
            "$ref",
            "items",
            "prefixItems",
            "properties",
            "required",
            "additionalProperties",
        ]
    )
}
_LATE = {"default": 1000, "$defs": 1001}


def ordered(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its keys in a readable order (``type`` first, ``default`` last)."""
    keys = sorted(node, key=lambda k: _ORDER.get(k, _LATE.get(k, 100)))
    return {k: node[k] for k in keys}
