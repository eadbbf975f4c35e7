"""What the binder does to arguments before validation, guided by the JSON schema.

``null`` handling (a strict-mode model's ``null`` for an omitted argument) and decoding
objects or arrays that a model sent as JSON text. Validation itself is pydantic's (tools
made from a function) or the ``jsonschema`` library's (tools made from a schema). The
walks here recurse: the binder bounds the arguments' depth before calling them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["allows_null", "decode_json_strings", "drop_nulls", "has_null"]


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref: str = schema["$ref"]
        target: Any = root
        if not ref.startswith("#"):
            return {}
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            return {}
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **siblings} if siblings else target
        seen += 1
    return schema


def allows_null(schema: Any, root: Mapping[str, Any]) -> bool:
    """Whether ``schema`` accepts ``null``."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return schema is not False
    t = schema.get("type")
    if t is not None:
        if t == "null" or (isinstance(t, list) and "null" in t):
            return True
        if not any(k in schema for k in ("anyOf", "oneOf")):
            return False
    if "enum" in schema:
        return None in schema["enum"]
    if "const" in schema:
        return schema["const"] is None
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return any(allows_null(s, root) for s in schema[key])
    return t is None


def has_null(value: Any) -> bool:
    """Whether JSON-like ``value`` holds a ``null`` anywhere (itself included)."""
    if value is None:
        return True
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return False
    for v in items:  # noqa: SIM110 - a loop is faster than any() over a generator
        if v is None or (isinstance(v, (dict, list)) and has_null(v)):
            return True
    return False


def drop_nulls(value: Any, schema: Any, root: Mapping[str, Any] | None = None) -> Any:
    """Remove ``null`` values of optional properties whose schema does not accept null.

    Strict tool schemas (see ``strict_schema``) make every property required and the
    optional ones nullable; a model then sends ``null`` to mean "use the default". This
    turns such a ``null`` back into an omitted argument. Returns a new value; ``value``
    is not modified.
    """
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        if not isinstance(props, dict):
            branch = _single_branch(schema, root)
            return drop_nulls(value, branch, root) if branch is not None else value
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        for k, v in value.items():
            sub = props.get(k)
            if v is None and sub is not None and k not in required and not allows_null(sub, root):
                continue
            out[k] = drop_nulls(v, sub, root) if sub is not None else v
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [drop_nulls(v, items, root) for v in value]
        branch = _single_branch(schema, root)
        return drop_nulls(value, branch, root) if branch is not None else value
    return value


def _kinds(schema: Any, root: Mapping[str, Any]) -> set[str]:
    """The JSON types a schema accepts (``"any"`` when it does not say)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return {"any"}
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return set().union(*(_kinds(s, root) for s in schema[key]))
    t = schema.get("type")
    if t is None:
        return {"object"} if "properties" in schema else {"any"}
    return set(t) if isinstance(t, list) else {t}


def decode_json_strings(
    args: Mapping[str, Any], schema: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Decode arguments that a model sent as JSON text where an object or array belongs.

    Models sometimes send ``{"order": "{\\"item\\": \\"tea\\"}"}``. For each argument that
    is a string, whose schema wants an object or an array and does not accept a string,
    the string is parsed as JSON. Returns the new arguments, or ``None`` when nothing
    changed.
    """
    import json

    props = schema.get("properties") or {}
    out = dict(args)
    changed = False
    for name, value in args.items():
        if not isinstance(value, str) or name not in props:
            continue
        kinds = _kinds(props[name], schema)
        if not kinds & {"object", "array"} or kinds & {"string", "any"}:
            continue
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            continue
        if isinstance(decoded, dict | list):
            out[name] = decoded
            changed = True
    return out if changed else None


def _single_branch(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """The one non-null branch of an ``anyOf``/``oneOf``, if there is exactly one."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = [s for s in schema[key] if not _is_null(_resolve(s, root))]
            return branches[0] if len(branches) == 1 else None
    return None


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"
