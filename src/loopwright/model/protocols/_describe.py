"""Short descriptions of tool arguments for prompts: ``{"a": <integer: The first factor>}``."""

from __future__ import annotations

import json
from typing import Any

from .._chat import ToolInfo

__all__ = ["arguments_hint"]


def _type_label(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_label(schema.get('items'))}"
    if isinstance(kind, str):
        return kind
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            return " or ".join(_type_label(s) for s in schema[union])
    if "$ref" in schema:
        return "object"
    return "any"


def arguments_hint(info: ToolInfo) -> str:
    """A one-line sketch of a tool's JSON arguments: ``{"a": <integer: The first factor>}``."""
    props = info.parameters.get("properties") or {}
    required = set(info.parameters.get("required") or [])
    parts = []
    for name, schema in props.items():
        label = _type_label(schema)
        if name not in required:
            label += ", optional"
            if isinstance(schema, dict) and "default" in schema:
                label += f", default {json.dumps(schema['default'], ensure_ascii=False)}"
        desc = schema.get("description") if isinstance(schema, dict) else None
        if desc:
            label += f": {' '.join(str(desc).split())}"
        parts.append(f"{json.dumps(name)}: <{label}>")
    return "{" + ", ".join(parts) + "}"
