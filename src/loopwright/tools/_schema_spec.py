"""Argument validation for tools defined by a JSON schema (``Tool.from_info``).

The schema is checked by the ``jsonschema`` library (the draft its ``$schema`` names,
2020-12 by default), with one change: an ``integer`` must be an integer — a float with
an integral value (``1.0``, which JSON cannot tell from ``1``) is converted to ``1`` (at
most 10,000 of them in one call), any other float is an error for the model. Only the
first few errors are collected, however many the arguments have. A ``$ref`` that leads
nowhere or back to itself without end (a schema from elsewhere, an MCP server's) is an
error for the model on the values that reach it. So is a value that cannot be checked
against a ``pattern`` (or a ``patternProperties`` key) in bounded time: the patterns are
matched by :mod:`loopwright._patterns` (``regex``, with a timeout shared by the call's
matches, and by all the calls of a model reply in ``execute_tools``; a pattern too long,
too large once compiled or not valid, a string too long), never by ``re``, which can
backtrack for minutes with the event loop stopped. No
reference to a URL is ever fetched: a ``$ref`` out of the schema is refused when the
tool is made, and the validator's registry is empty, so a ``$dynamicRef`` to one
resolves to nothing.

Then the arguments are fitted to the callable's signature, whatever the schema says
about extra keys: an argument the function cannot take, or a parameter without a
default that was not passed, is an error for the model too (a ``TypeError`` from the
call would end the run).
"""

from __future__ import annotations

import inspect
import itertools
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .._patterns import PatternUnchecked, bounded_patterns, search
from ._errors import ToolArgumentsError, ToolDefinitionError

__all__ = ["SchemaSpec", "key_text", "short"]

_MAX_ERRORS = 10
_MAX_CONVERSIONS = 10_000
"""The most integral floats (``1.0``) converted to integers in one call."""
_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}
_SIZES = {
    "minLength": ("at least", "characters"),
    "maxLength": ("at most", "characters"),
    "minItems": ("at least", "items"),
    "maxItems": ("at most", "items"),
    "minProperties": ("at least", "properties"),
    "maxProperties": ("at most", "properties"),
}


def short(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (escapes control characters and surrogates)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validator_class(schema: Mapping[str, Any]) -> Any:
    from jsonschema.validators import Draft202012Validator, extend, validator_for

    base = validator_for(schema, default=Draft202012Validator)
    return extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_int))


def _local_refs_only(schema: Any, tool_name: str) -> bool:
    """Refuse a ``$ref`` out of the schema; return whether the schema holds a pattern."""
    patterns = False
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            patterns = patterns or "pattern" in node or "patternProperties" in node
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                raise ToolDefinitionError(
                    f"Tool {tool_name!r}: the schema refers to {ref!r}; only references "
                    'inside the schema ("#/$defs/...") are supported.'
                )
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return patterns


def _admits_none(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty or annotation in (Any, None, object):
        return True
    if isinstance(annotation, str):
        return True  # could not be resolved: do not guess
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_admits_none(a) for a in typing.get_args(annotation))
    return annotation is type(None)


class SchemaSpec:
    """Validates arguments against a JSON schema and fits them to a callable.

    Attributes:
        parameters: The JSON schema the arguments are checked against.
        patterns: Whether it holds a pattern (a check may take long: ``_bind_call``).
    """

    def __init__(self, fn: Callable[..., Any], tool_name: str, parameters: dict[str, Any]) -> None:
        from jsonschema.exceptions import SchemaError

        # patterns are matched in bounded time (see the module's docstring)
        self.patterns = _local_refs_only(parameters, tool_name)
        self._bounded = bounded_patterns if self.patterns else None
        cls = _validator_class(parameters)
        try:
            cls.check_schema(parameters)
        except SchemaError as ex:
            raise _schema_error(tool_name, ex) from None
        self.parameters = parameters
        from referencing import Registry

        # an empty registry: a reference to a URL ($dynamicRef, which the check above
        # does not look at) is never fetched, where jsonschema's default would open it
        self._validator = cls(parameters, registry=Registry())
        self._read_signature(fn)
        required = parameters.get("required")
        if self._names is not None and isinstance(required, list):
            cannot = [r for r in required if isinstance(r, str) and r not in self._names]
            if cannot:  # every call would fail: the model must send what fn refuses
                raise ToolDefinitionError(
                    f"The schema of tool {tool_name!r} requires "
                    f"{', '.join(repr(r) for r in cannot)}, which its function does not "
                    f"take (its parameters: {', '.join(sorted(self._names)) or 'none'})."
                )

    def _read_signature(self, fn: Callable[..., Any]) -> None:
        self._names: frozenset[str] | None = None  # None: it takes any keyword
        self._required: tuple[str, ...] = ()
        self._positional: tuple[inspect.Parameter, ...] = ()
        # a null for one of these means "use the default" (how a strict schema omits it)
        self._null_default: frozenset[str] = frozenset()
        try:
            sig = inspect.signature(fn, eval_str=True)
        except Exception:
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):  # a builtin without a signature: call as is
                return
        params = sig.parameters.values()
        named = [p for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            self._names = frozenset(p.name for p in named)
        self._required = tuple(p.name for p in named if p.default is p.empty)
        self._positional = tuple(p for p in named if p.kind is p.POSITIONAL_ONLY)
        self._null_default = frozenset(
            p.name
            for p in named
            if p.default is not p.empty and p.default is not None and not _admits_none(p.annotation)
        )

    @property
    def positional(self) -> tuple[str, ...]:
        """The names of the parameters passed by position (positional-only ones)."""
        return tuple(p.name for p in self._positional)

    def bind(self, tool_name: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``arguments``; return the positional and keyword arguments to call with.

        ``arguments`` is not modified.

        Raises:
            ToolArgumentsError: The arguments do not fit the schema or the callable.
        """
        from referencing.exceptions import Unresolvable

        try:
            if self._bounded is None:  # no pattern to match
                return self._bind(tool_name, arguments)
            with self._bounded():
                return self._bind(tool_name, arguments)
        except PatternUnchecked as ex:
            raise ToolArgumentsError(
                f"Tool {tool_name!r} could not check the argument {short(ex.text)} against "
                f"its pattern {short(ex.pattern)}: {ex.why}. Call it with other arguments, "
                "or do without it."
            ) from None
        except (RecursionError, Unresolvable) as ex:
            # a schema from elsewhere (an MCP server's) whose $ref leads nowhere or back
            # to itself without end: jsonschema fails on the values that reach it
            why = "refers to itself without end" if isinstance(ex, RecursionError) else ex
            raise ToolArgumentsError(
                f"Tool {tool_name!r} cannot check these arguments: its schema {why}. "
                "Call it with other arguments, or do without it."
            ) from None

    def _bind(self, tool_name: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        # one pass finds what is wrong, and stops after a few errors (a hostile call may
        # have millions); integral floats where integers belong are converted
        fixes: list[list[Any]] = []
        errors: list[Any] = []
        for err in self._validator.iter_errors(arguments):
            paths = [list(e.absolute_path) for e in _tree(err) if _integral(e)]
            if not paths:
                errors.append(err)
                if len(errors) > _MAX_ERRORS:
                    break
            elif len(fixes) < _MAX_CONVERSIONS:
                fixes.extend(paths)
            else:
                line = (
                    f"more than {_MAX_CONVERSIONS} floats where integers belong; "
                    "send integers (1, not 1.0)"
                )
                raise self.error(tool_name, [line])
        if fixes:
            arguments = _make_ints(arguments, fixes)
            errors = list(itertools.islice(self._validator.iter_errors(arguments), _MAX_ERRORS + 1))
        if errors:
            lines: list[str] = []
            # missing arguments first, then the rest in the schema's order
            errors.sort(key=lambda e: e.validator != "required" or bool(e.absolute_path))
            for err in errors:
                lines.extend(_describe(err))
            raise self.error(tool_name, lines)
        return self._fit(tool_name, arguments)

    def error(self, tool_name: str, lines: list[str]) -> ToolArgumentsError:
        """The error for the model listing ``lines`` (at most ten) and the signature."""
        from ._schema import signature_hint

        shown = "\n".join(f"- {line}" for line in lines[:_MAX_ERRORS])
        more = "\n- ... and more" if len(lines) > _MAX_ERRORS else ""
        return ToolArgumentsError(
            f"Invalid arguments for tool {tool_name!r}:\n{shown}{more}\n"
            f"Expected: {signature_hint(tool_name, self.parameters)}"
        )

    def _fit(self, tool_name: str, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        names = self._names
        lines = []
        if names is not None:
            lines = [f"{key_text(k)}: unexpected argument" for k in kwargs if k not in names]
        lines += [f"{n}: missing required argument" for n in self._required if n not in kwargs]
        if lines:
            raise self.error(tool_name, lines)
        for name in self._null_default:
            if name in kwargs and kwargs[name] is None:
                kwargs = {k: v for k, v in kwargs.items() if k != name}
        if not self._positional:
            return [], kwargs
        kwargs = dict(kwargs)
        args = [kwargs.pop(p.name) if p.name in kwargs else p.default for p in self._positional]
        return args, kwargs


def key_text(name: Any) -> str:
    """An argument's name or index as the model is shown it (escaped, cut to 60 characters).

    Control characters, NUL bytes and lone surrogates in a name the model made up are
    shown as escapes, like values.
    """
    if isinstance(name, str):
        text = repr(name)[1:-1]
        return text if len(text) <= 60 else text[:57] + "..."
    return short(name)


def _integral(err: Any) -> bool:
    """Whether ``err`` is an integral float where only an integer (not a number) fits."""
    value = err.instance
    if err.validator != "type" or not isinstance(value, float) or not value.is_integer():
        return False
    wanted = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
    return "integer" in wanted and "number" not in wanted


def _tree(err: Any) -> Iterator[Any]:
    stack = [err]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(e.context or ())


def _make_ints(arguments: dict[str, Any], paths: list[list[Any]]) -> dict[str, Any]:
    """A copy of ``arguments`` with the floats at ``paths`` made ints.

    Only the containers on the way are copied, each once (``arguments`` is the model's
    call, kept in the conversation).
    """
    root = dict(arguments)
    copies = {id(root)}
    for path in paths:
        node: Any = root
        for part in path[:-1]:
            child = node[part]
            if id(child) not in copies:
                child = dict(child) if isinstance(child, dict) else list(child)
                copies.add(id(child))
                node[part] = child
            node = child
        node[path[-1]] = int(node[path[-1]])
    return root


def _where(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(err: Any) -> Iterator[str]:
    """One line per problem, written for the model, from a ``jsonschema`` error."""
    path = _where(err.absolute_path)
    where = path or "value"
    prefix = f"{path}." if path else ""
    kind, bound, value = err.validator, err.validator_value, err.instance
    if kind == "required":
        for name in bound:
            if isinstance(value, dict) and name not in value:
                yield f"{prefix}{name}: missing required argument"
    elif kind in ("additionalProperties", "unevaluatedProperties") and isinstance(value, dict):
        props = err.schema.get("properties") or {}
        patterns = err.schema.get("patternProperties") or {}
        for k in value:
            if k not in props and not (isinstance(k, str) and any(search(p, k) for p in patterns)):
                yield f"{prefix}{key_text(k)}: unexpected argument"
    elif kind == "type":
        wanted = bound if isinstance(bound, list) else [bound]
        yield f"{where}: expected {' or '.join(wanted)}, got {short(value)}"
    elif kind == "enum":
        allowed = ", ".join(short(v) for v in bound)
        yield f"{where}: must be one of {allowed}, got {short(value)}"
    elif kind == "const":
        yield f"{where}: must be {short(bound)}, got {short(value)}"
    elif kind in _BOUNDS:
        yield f"{where}: must be {_BOUNDS[kind]} {bound}, got {short(value)}"
    elif kind in _SIZES:
        most, unit = _SIZES[kind]
        yield f"{where}: must have {most} {bound} {unit}, got {len(value)}"
    elif kind == "pattern":
        yield f"{where}: must match the pattern {bound!r}"
    elif kind in ("anyOf", "oneOf"):
        yield f"{where}: {short(value)} matches none of the allowed forms"
    elif kind is None:  # the schema ``false``
        yield f"{where}: no value is allowed here"
    else:
        message = str(err.message)
        yield f"{where}: {message if len(message) <= 200 else message[:197] + '...'}"


def _schema_error(tool_name: str, ex: Any) -> ToolDefinitionError:
    from jsonschema.exceptions import best_match

    err = best_match([ex, *ex.context]) if ex.context else ex
    if err.validator == "format" and err.validator_value == "regex":
        return ToolDefinitionError(
            f"Tool {tool_name!r}: the pattern {err.instance!r} is not a valid regular expression."
        )
    where = _where(err.absolute_path) or "the top"
    return ToolDefinitionError(
        f"The parameters of tool {tool_name!r} are not a valid JSON schema (at {where}): "
        f"{err.message}"
    )
