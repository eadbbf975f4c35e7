"""Parameter schemas and argument validation from a function's signature (via pydantic).

pydantic builds a model of the function's parameters; its JSON schema is then cleaned
into the form tools use:

- no ``title`` keywords (pydantic adds one to every node);
- ``$defs`` inlined where they can be; definitions that refer to themselves (recursive
  models) stay under a top-level ``$defs``;
- every object with ``properties`` has ``additionalProperties: false`` unless its model
  allows extra keys;
- a top-level ``required`` list, even when empty;
- keys in a readable order (``type`` and ``description`` first, ``default`` last).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, get_args, get_origin

from pydantic_core import ValidationError

from ..model._schema_order import ordered
from ._docstrings import Docstring
from ._errors import ToolArgumentsError, ToolDefinitionError
from ._schema_spec import key_text

__all__ = [
    "FunctionSpec",
    "clean_schema",
    "format_validation_errors",
    "function_spec",
    "signature_hint",
]

_VALUE_KEYS = frozenset({"default", "enum", "const", "examples", "required"})
_MAP_KEYS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def _refs(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref[len("#/$defs/") :])
        for k, v in node.items():
            if k not in _VALUE_KEYS:
                _refs(v, found)
    elif isinstance(node, list):
        for v in node:
            _refs(v, found)
    return found


def _recursive(defs: Mapping[str, Any]) -> set[str]:
    """The definitions that can reach themselves through ``$ref``."""
    edges = {name: _refs(d, set()) for name, d in defs.items()}
    recursive: set[str] = set()
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            cur = stack.pop()
            if cur == start:
                recursive.add(start)
                break
            if cur in seen or cur not in edges:
                continue
            seen.add(cur)
            stack.extend(edges[cur])
    return recursive


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Clean a pydantic JSON schema into the tool form described in this module."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    keep = _recursive(defs)

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if name not in keep and name in defs:
                siblings = walk({k: v for k, v in node.items() if k != "$ref"})
                return ordered({**walk(defs[name]), **siblings})
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "title":
                continue
            if k in _MAP_KEYS and isinstance(v, dict):
                out[k] = {name: walk(sub) for name, sub in v.items()}
            elif k in _VALUE_KEYS:
                out[k] = v
            else:
                out[k] = walk(v)
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return ordered(out)

    top = {k: v for k, v in schema.items() if k not in ("$defs", "title", "description")}
    out = walk(top)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    out.setdefault("required", [])
    out.setdefault("additionalProperties", False)
    if keep:
        out["$defs"] = {name: walk(defs[name]) for name in sorted(keep)}
    return ordered(out)


def format_validation_errors(tool_name: str, errors: list[Any], parameters: dict[str, Any]) -> str:
    """Say, for a model, what was wrong with its arguments and what the tool expects."""
    lines = [f"Invalid arguments for tool {tool_name!r}:"]
    for err in errors[:10]:
        loc = ".".join(key_text(p) for p in err.get("loc", ()))
        kind = err.get("type")
        if kind == "extra_forbidden" or kind == "unexpected_keyword_argument":
            lines.append(f"- {loc}: unexpected argument")
        elif kind == "missing":
            lines.append(f"- {loc}: missing required argument")
        else:
            got = repr(err.get("input"))
            if len(got) > 80:
                got = got[:77] + "..."
            where = f"{loc}: " if loc else ""
            lines.append(f"- {where}{err.get('msg', 'invalid value')} (got {got})")
    if len(errors) > 10:
        lines.append(f"- ... and {len(errors) - 10} more")
    lines.append(f"Expected: {signature_hint(tool_name, parameters)}")
    return "\n".join(lines)


def _type_hint(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "enum" in schema:
        return " | ".join(_json(v) for v in schema["enum"])
    if "const" in schema:
        return _json(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_hint(s) for s in schema[key])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(str(x) for x in t)
    if t == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type_hint(schema['items'])}"
    return str(t) if t else "any"


def _json(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def signature_hint(name: str, parameters: Mapping[str, Any]) -> str:
    """A one-line signature like ``search(query: string, limit: integer = 10)``."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    parts = []
    for pname, sub in props.items():
        part = f"{pname}: {_type_hint(sub)}"
        if isinstance(sub, dict) and "default" in sub:
            part += f" = {_json(sub['default'])}"
        elif pname not in required:
            part += " (optional)"
        parts.append(part)
    return f"{name}({', '.join(parts)})"


@dataclass(slots=True, frozen=True)
class _Param:
    field: str
    name: str
    positional: bool


@dataclass(slots=True)
class FunctionSpec:
    """What the tool layer knows about a function's parameters.

    Attributes:
        model: The pydantic model that validates (and coerces) arguments.
        params: The parameters the model sees, in signature order.
        parameters: The clean JSON schema of the arguments.
        description: The docstring's prose.
    """

    model: Any  # type[BaseModel]
    params: tuple[_Param, ...]
    parameters: dict[str, Any]
    description: str
    # pydantic matches a ``pattern`` with Rust's regex crate, in linear time
    patterns: ClassVar[bool] = False
    # (name, field) of each parameter when all are passed by keyword (the usual case)
    _keywords: tuple[tuple[str, str], ...] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        positional = any(p.positional for p in self.params)
        self._keywords = None if positional else tuple((p.name, p.field) for p in self.params)

    @property
    def positional(self) -> tuple[str, ...]:
        """The names of the parameters passed by position (positional-only ones)."""
        return tuple(p.name for p in self.params if p.positional)

    def bind(
        self, tool_name: str, arguments: Mapping[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``arguments`` and return the positional and keyword arguments to call with.

        Raises:
            ToolArgumentsError: The arguments do not fit the parameters.
        """
        try:
            validated = self.model.__pydantic_validator__.validate_python(arguments)
        except ValidationError as ex:
            message = format_validation_errors(tool_name, ex.errors(), self.parameters)
            raise ToolArgumentsError(message) from None
        if self._keywords is not None:
            values = validated.__dict__
            return [], {name: values[f] for name, f in self._keywords}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            value = getattr(validated, p.field)
            if p.positional:
                args.append(value)
            else:
                kwargs[p.name] = value
        return args, kwargs


def _with_defaults(annotation: Any, meta: Any) -> Any:
    """``Annotated[annotation, meta]`` with ``meta`` first, so the user's metadata wins."""
    if get_origin(annotation) is Annotated:
        base, *rest = get_args(annotation)
        return Annotated[(base, meta, *rest)]
    return Annotated[annotation, meta]


def function_spec(fn: Callable[..., Any], tool_name: str, doc: Docstring) -> FunctionSpec:
    """Build the :class:`FunctionSpec` of ``fn``.

    ``*args`` and ``**kwargs`` are left out of the schema: the model cannot pass them and
    the function is called without them.

    Raises:
        ToolDefinitionError: The signature cannot be read, or a parameter's type cannot
            be expressed as JSON schema.
    """
    from pydantic import ConfigDict, Field, create_model
    from pydantic.fields import FieldInfo

    # name the function too when the tool is named otherwise
    fname = getattr(fn, "__name__", None)
    qualname = getattr(fn, "__qualname__", fname)
    where = f"tool {tool_name!r}" + (f" (function {qualname})" if fname != tool_name else "")
    try:
        sig = inspect.signature(fn, eval_str=True)
    except NameError as ex:
        raise ToolDefinitionError(
            f"Cannot resolve a type hint of {where}: {ex}. Define the types a tool's "
            "parameters use at module level (or import them there)."
        ) from ex
    except (ValueError, TypeError) as ex:
        raise ToolDefinitionError(f"Cannot read the signature of {where}: {ex}.") from ex

    fields: dict[str, Any] = {}
    params: list[_Param] = []
    annotations: dict[str, Any] = {}
    plist = list(sig.parameters.values())
    for i, p in enumerate(plist):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if i == 0 and p.name in ("self", "cls") and inspect.isfunction(fn):
            raise ToolDefinitionError(
                f"{where} takes {p.name!r}: make a tool of the bound method "
                f"(tool(instance.method)) or of a function, not of the unbound method."
            )
        annotation = Any if p.annotation is p.empty else p.annotation
        meta = Field(alias=p.name, description=doc.params.get(p.name))
        default = p.default
        if default is p.empty:
            default = ...
        elif not isinstance(default, FieldInfo):
            default = Field(default=default)
        field = f"p{i}"
        fields[field] = (_with_defaults(annotation, meta), default)
        params.append(_Param(field, p.name, p.kind is p.POSITIONAL_ONLY))
        annotations[p.name] = annotation

    config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, arbitrary_types_allowed=False)
    try:
        model = create_model(f"{tool_name}_arguments", __config__=config, **fields)
        schema = _json_schema(model)
    except Exception as ex:
        raise _definition_error(where, annotations, ex) from ex
    for param in params:
        if model.model_fields[param.field].alias != param.name:
            raise ToolDefinitionError(
                f"Parameter {param.name!r} of {where} sets an alias; tool parameters are named "
                "by the signature (rename the parameter instead)."
            )
    return FunctionSpec(model, tuple(params), clean_schema(schema), doc.description)


def _json_schema(model: Any) -> dict[str, Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class _Generate(GenerateJsonSchema):
        # a default that is not JSON (an object, a function) just is not shown
        ignored_warning_kinds = {"skipped-choice", "non-serializable-default"}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result: dict[str, Any] = model.model_json_schema(schema_generator=_Generate)
    return result


def _definition_error(
    where: str, annotations: dict[str, Any], ex: Exception
) -> ToolDefinitionError:
    """Name the parameter whose type pydantic could not handle."""
    from pydantic import TypeAdapter

    for name, annotation in annotations.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                TypeAdapter(annotation).json_schema()
        except Exception as inner:
            # pydantic's first sentence names the type; its advice is about models
            first = str(inner).strip().splitlines()[0].split(". ")[0].rstrip(".")
            return ToolDefinitionError(
                f"Parameter {name!r} of {where} has a type that cannot be expressed as "
                f"JSON schema ({first}). Use JSON-compatible types: str, int, float, bool, "
                "lists, dicts, Literal, Enum, dates, pydantic models, dataclasses or "
                "TypedDicts."
            )
    first = str(ex).strip().splitlines()[0]
    return ToolDefinitionError(f"Cannot build the parameter schema of {where}: {first}")
