"""A small JSON-schema checker for tools defined by a schema, and null handling.

Tools built from a function are validated by pydantic. Tools built from an explicit
schema (``Tool.from_info``) are checked here against the common keywords: ``type``,
``enum``, ``const``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``prefixItems``, ``anyOf``/``oneOf``/``allOf``, local ``$ref``, and the usual bounds
(``minimum``/``maximum``, ``minLength``/``maxLength``, ``minItems``/``maxItems``,
``pattern``). Other keywords are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["allows_null", "decode_json_strings", "drop_nulls", "has_null", "validate_json"]

_MAX_ERRORS = 10


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
        except ValueError:
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


_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, dict),
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_json(value: Any, schema: Any, root: Mapping[str, Any] | None = None) -> list[str]:
    """Check ``value`` against ``schema``; return what is wrong (empty when valid)."""
    errors: list[str] = []
    _check(value, schema, root if root is not None else schema, "", errors)
    return errors[:_MAX_ERRORS]


def _check(value: Any, schema: Any, root: Mapping[str, Any], path: str, errors: list[str]) -> None:
    if len(errors) >= _MAX_ERRORS:
        return
    schema = _resolve(schema, root)
    if schema is True or schema is None:
        return
    if schema is False:
        errors.append(f"{path or 'value'}: no value is allowed here")
        return
    if not isinstance(schema, dict):
        return
    where = path or "value"
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_TYPES.get(x, lambda v: True)(value) for x in types):
            errors.append(f"{where}: expected {' or '.join(types)}, got {_short(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_short(v) for v in schema["enum"])
        errors.append(f"{where}: must be one of {allowed}, got {_short(value)}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: must be {_short(schema['const'])}, got {_short(value)}")
    for key in ("anyOf", "oneOf"):
        if key in schema and all(validate_json(value, s, root) for s in schema[key]):
            errors.append(f"{where}: {_short(value)} matches none of the allowed forms")
    for sub in schema.get("allOf", ()):
        _check(value, sub, root, path, errors)
    if isinstance(value, str):
        _bounds(len(value), schema, "minLength", "maxLength", "characters", where, errors)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and re.search(pattern, value) is None:
            errors.append(f"{where}: must match the pattern {pattern!r}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _numeric(value, schema, where, errors)
    elif isinstance(value, list | tuple):
        _bounds(len(value), schema, "minItems", "maxItems", "items", where, errors)
        prefix = schema.get("prefixItems") or []
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                _check(item, sub, root, f"{path}[{i}]", errors)
    elif isinstance(value, dict):
        _object(value, schema, root, path, errors)


def _bounds(
    n: int, schema: Mapping[str, Any], lo: str, hi: str, unit: str, where: str, errors: list[str]
) -> None:
    if lo in schema and n < schema[lo]:
        errors.append(f"{where}: must have at least {schema[lo]} {unit}, got {n}")
    if hi in schema and n > schema[hi]:
        errors.append(f"{where}: must have at most {schema[hi]} {unit}, got {n}")


def _numeric(value: float, schema: Mapping[str, Any], where: str, errors: list[str]) -> None:
    checks: tuple[tuple[str, Callable[[float], bool], str], ...] = (
        ("minimum", lambda b: value >= b, ">="),
        ("maximum", lambda b: value <= b, "<="),
        ("exclusiveMinimum", lambda b: value > b, ">"),
        ("exclusiveMaximum", lambda b: value < b, "<"),
    )
    for key, ok, op in checks:
        bound = schema.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool) and not ok(bound):
            errors.append(f"{where}: must be {op} {bound}, got {value}")


def _object(
    value: dict[str, Any],
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    path: str,
    errors: list[str],
) -> None:
    props = schema.get("properties") or {}
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or ():
        if name not in value:
            errors.append(f"{prefix}{name}: missing required argument")
    extra = schema.get("additionalProperties", True)
    for k, v in value.items():
        if k in props:
            _check(v, props[k], root, f"{prefix}{k}", errors)
        elif extra is False:
            errors.append(f"{prefix}{k}: unexpected argument")
        elif isinstance(extra, dict):
            _check(v, extra, root, f"{prefix}{k}", errors)
