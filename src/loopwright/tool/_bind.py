"""The one binder: how the model's arguments become the arguments a tool is called with.

Every tool binds the same way, whether it was made from a function (its validator is a
pydantic model, see ``_schema``) or from a JSON schema (the ``jsonschema`` library,
see ``_schema_spec``):

1. the arguments must be a JSON object;
2. they may nest at most :data:`MAX_ARGUMENT_DEPTH` objects and arrays deep. This is
   checked first, without recursion: deeper data would exhaust the stack of the
   validators (and of whatever stores or shows the call later), ending the run;
3. a ``null`` for an optional property whose schema does not accept ``null`` is dropped
   (how a strict-mode model omits an argument; the function's default then applies);
4. the validator checks them and converts them to what the callable takes;
5. when that fails, arguments that the model sent as JSON text where an object or an
   array belongs are decoded, and validated once more.

Every failure is a :class:`ToolArgumentsError`, written for the model. Strings are data:
lone surrogates and NUL bytes reach the tool unchanged (error messages show values with
``repr``, which escapes them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ._errors import ToolArgumentsError
from ._jsonschema import decode_json_strings, drop_nulls, has_null

__all__ = ["MAX_ARGUMENT_DEPTH", "Validator", "bind_arguments", "too_deep"]

MAX_ARGUMENT_DEPTH = 64
"""How many objects and arrays a tool's arguments may nest (the arguments object is 1)."""


class Validator(Protocol):
    """What checks a tool's arguments: a ``FunctionSpec`` or a ``SchemaSpec``."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema the arguments are checked against."""
        ...

    @property
    def positional(self) -> tuple[str, ...]:
        """The names of the parameters passed by position."""
        ...

    def bind(self, tool_name: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate; return the positional and keyword arguments to call with."""
        ...


def too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether JSON-like ``value`` nests more than ``limit`` dicts and lists (no recursion).

    Walks level by level and stops at the first level past the limit, so it costs at
    most the size of the part of ``value`` it visits.
    """
    level = [value] if isinstance(value, dict | list | tuple) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for node in level:
            for v in node.values() if isinstance(node, dict) else node:
                if isinstance(v, dict | list | tuple):
                    below.append(v)
        level = below
    return False


def _depth_error(tool_name: str, where: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        f"Invalid arguments for tool {tool_name!r}: {where} nest objects and arrays more "
        f"than {MAX_ARGUMENT_DEPTH} levels deep. Send flatter arguments matching the "
        "tool's parameters."
    )


def bind_arguments(
    tool_name: str, validator: Validator, arguments: Mapping[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Bind the model's ``arguments`` for ``validator`` (see the module's docstring).

    Raises:
        ToolArgumentsError: The arguments are invalid; the message is for the model.
    """
    params = validator.parameters
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        from ._schema import signature_hint

        raise ToolArgumentsError(
            f"The arguments of tool {tool_name!r} must be a JSON object, got "
            f"{type(arguments).__name__}. Expected: {signature_hint(tool_name, params)}"
        )
    args = dict(arguments)
    if too_deep(args):
        raise _depth_error(tool_name, "the arguments")
    if has_null(args):  # the usual call has none: skip walking the schema
        args = drop_nulls(args, params)
    try:
        return validator.bind(tool_name, args)
    except ToolArgumentsError:
        # a model may have sent an object or a list as JSON text: decode and retry
        decoded = decode_json_strings(args, params)
        if decoded is None:
            raise
        if too_deep(decoded):
            raise _depth_error(tool_name, "the objects or arrays sent as JSON text") from None
        try:
            return validator.bind(tool_name, drop_nulls(decoded, params))
        except ToolArgumentsError:
            pass
        raise
