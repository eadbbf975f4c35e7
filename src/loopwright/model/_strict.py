"""The strict JSON-schema form that OpenAI's strict function calling accepts (``lw.strict_schema``
is the public name, in ``tools/``; the openai provider calls this directly)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import StrictSchemaError
from ._chat import ToolInfo
from ._schema_order import ordered

__all__ = ["strict_parameters"]

# keywords strict mode accepts; anything else is dropped
_KEEP = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def strict_parameters(schema: Mapping[str, Any] | ToolInfo) -> dict[str, Any]:
    """Turn a tool's parameter schema into the strict form OpenAI requires.

    ``schema`` is a parameter schema, or a tool (or its ``ToolInfo``) whose parameters
    to convert: ``lw.strict_schema(search)`` is ``lw.strict_schema(search.info.parameters)``.

    - every object lists all its properties in ``required`` and has
      ``additionalProperties: false``; properties that were optional become nullable
      (``"type": ["integer", "null"]`` or an ``anyOf`` with ``{"type": "null"}``) —
      ``Tool.validate`` turns a ``null`` for a parameter that does not accept ``None``
      back into "use the default";
    - ``oneOf`` becomes ``anyOf``; a single ``allOf`` is merged; tuples
      (``prefixItems``) become arrays of the union of their item types with a fixed
      length;
    - a ``$ref`` with sibling keywords is replaced by its definition;
    - unsupported keywords (``default``, ``title``, ``examples``, ``minLength``,
      ``uniqueItems``, unknown ``format``\\ s, ...) are dropped.

    The input is not modified. A tool keeps validating against its own schema, so a
    strict-mode model's ``null`` for an optional parameter reaches the function as its
    default; a tool made with ``Tool.from_info`` from the strict schema itself does the
    same for a parameter whose default is not ``None`` and whose annotation does not
    admit ``None``.

    Raises:
        StrictSchemaError: The schema has something strict mode cannot express: a
            free-form mapping (``dict[str, T]``), a value of any type (``Any``), or
            several ``allOf`` parts (the message names where); or ``schema`` is neither a
            schema, a tool nor a ``ToolInfo``.
    """
    if isinstance(schema, ToolInfo):
        schema = schema.parameters
    elif not isinstance(schema, Mapping):
        raise StrictSchemaError(
            "strict_schema takes a tool's parameter schema (a dict), a Tool or a ToolInfo, "
            f"got {type(schema).__name__}."
        )
    if schema.get("type") != "object":
        raise StrictSchemaError(
            f'A strict schema must have "type": "object" at the top, got {schema.get("type")!r}.'
        )
    defs = schema.get("$defs") or {}
    out: dict[str, Any] = _strict(dict(schema), defs, "parameters")
    return out


def _fail(path: str, what: str) -> StrictSchemaError:
    return StrictSchemaError(
        f"{path}: {what} cannot be expressed in a strict schema; use a non-strict schema, "
        "or change the type (e.g. a pydantic model instead of a dict, a union of concrete "
        "types instead of Any)."
    )


def _strict(node: Any, defs: Mapping[str, Any], path: str) -> Any:
    if not isinstance(node, dict):
        raise _fail(path, f"the schema {node!r}")
    node = dict(node)
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        name = ref.rsplit("/", 1)[-1]
        if ref.startswith("#/$defs/") and name in defs:
            node = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    if "allOf" in node:
        parts = node.pop("allOf")
        if len(parts) != 1:
            raise _fail(path, "an allOf of several schemas")
        node = {**parts[0], **node}
    if "prefixItems" in node and "items" not in node:
        branches: list[Any] = []
        for sub in node["prefixItems"]:
            if sub not in branches:
                branches.append(sub)
        node["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
        node.setdefault("minItems", len(node["prefixItems"]))
        node.setdefault("maxItems", len(node["prefixItems"]))
    if "format" in node and node["format"] not in _FORMATS:
        del node["format"]
    out: dict[str, Any] = {k: v for k, v in node.items() if k in _KEEP}
    if not any(k in out for k in ("type", "anyOf", "enum", "const", "$ref")):
        raise _fail(path, "a value of any type")

    if "anyOf" in out:
        out["anyOf"] = [_strict(s, defs, f"{path}.anyOf[{i}]") for i, s in enumerate(out["anyOf"])]
    if "items" in out:
        if out["items"] is True or out["items"] == {}:
            raise _fail(f"{path}.items", "a list of values of any type")
        out["items"] = _strict(out["items"], defs, f"{path}.items")
    if "$defs" in out:
        out["$defs"] = {name: _strict(d, defs, f"$defs.{name}") for name, d in out["$defs"].items()}
    types = out.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object or "properties" in out:
        extra = out.get("additionalProperties", False)
        if extra is not False:
            raise _fail(path, "a mapping with free-form keys (dict)")
        if "properties" not in out and path != "parameters":
            raise _fail(path, "an object without properties")
        props: dict[str, Any] = out.get("properties") or {}
        required = set(out.get("required") or ())
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            strict_sub = _strict(sub, defs, f"{path}.{name}")
            new_props[name] = strict_sub if name in required else _nullable(strict_sub, defs)
        out["properties"] = new_props
        out["required"] = list(new_props)
        out["additionalProperties"] = False
    return ordered(out)


def _allows_null(node: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if "anyOf" in node:
        return any(_allows_null(s, defs) for s in node["anyOf"])
    if "enum" in node:
        return None in node["enum"]
    if "const" in node:
        return node["const"] is None
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return isinstance(target, dict) and _allows_null(target, defs)
    return False


def _nullable(node: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    if _allows_null(node, defs):
        return node
    t = node.get("type")
    if "anyOf" in node:
        return {**node, "anyOf": [*node["anyOf"], {"type": "null"}]}
    if isinstance(t, str) and "enum" not in node and "const" not in node and "$ref" not in node:
        return {**node, "type": [t, "null"]}
    if isinstance(t, list) and "enum" not in node and "const" not in node:
        return {**node, "type": [*t, "null"]}
    description = node.get("description")
    inner = {k: v for k, v in node.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    return ordered(out)
