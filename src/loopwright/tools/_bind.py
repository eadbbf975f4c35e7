"""The one binder: how the model's arguments become the arguments a tool is called with.

Every tool binds the same way, whether it was made from a function (its validator is a
pydantic model, see ``_schema``) or from a JSON schema (the ``jsonschema`` library,
see ``_schema_spec``):

1. the arguments must be a JSON object;
2. they may nest at most ``MAX_NESTING`` (100) objects and arrays deep, the bound that
   ``Model.generate`` applies to every call (see :mod:`loopwright._nesting`). This is
   checked first, without recursion, for calls that reach a tool some other way: deeper
   data would exhaust the stack of the validators (and of whatever stores or shows the
   call later), ending the run;
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

from .._nesting import MAX_NESTING, nesting_exceeds
from ._errors import ToolArgumentsError
from ._jsonschema import decode_json_strings, drop_nulls, has_null

__all__ = ["Validator", "bind_arguments"]


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

    @property
    def patterns(self) -> bool:
        """Whether a check may match the schema's patterns (``loopwright._patterns``)."""
        ...

    def bind(self, tool_name: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate; return the positional and keyword arguments to call with."""
        ...


def _depth_error(tool_name: str, where: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        f"Invalid arguments for tool {tool_name!r}: {where} nest objects and arrays more "
        f"than {MAX_NESTING} levels deep. Send flatter arguments matching the "
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
    if nesting_exceeds(args):
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
        if nesting_exceeds(decoded):
            raise _depth_error(tool_name, "the objects or arrays sent as JSON text") from None
        try:
            return validator.bind(tool_name, drop_nulls(decoded, params))
        except ToolArgumentsError:
            pass
        raise
