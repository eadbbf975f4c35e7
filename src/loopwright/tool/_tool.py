"""``Tool``, the ``@tool`` decorator and ``tool_with``."""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import re
import warnings
from collections.abc import Callable, Mapping
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeVar, overload

from ..model import ToolInfo
from ._errors import ToolArgumentsError, ToolDefinitionError
from ._jsonschema import decode_json_strings, drop_nulls, has_null
from ._threads import run_in_thread

if TYPE_CHECKING:
    from ._schema import FunctionSpec

__all__ = ["Tool", "tool", "tool_with"]

P = ParamSpec("P")
R = TypeVar("R")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__doc__")


class _Unset(enum.Enum):
    UNSET = 0


UNSET: Literal[_Unset.UNSET] = _Unset.UNSET


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError(
            f"{what} {name!r} is not a valid tool name: use 1 to 64 letters, digits, '_' "
            "or '-' (pass name=... to choose one)."
        )
    return name


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ToolDefinitionError(
            f"A tool's timeout must be a positive number of seconds or None, got {timeout!r}."
        )
    return timeout


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class Tool(Generic[P, R]):
    """A function the model can call: the function, its description and its parameters.

    Make one with :func:`tool` (from a function), :meth:`Tool.from_info` (from an explicit
    JSON schema) or :func:`tool_with` (a renamed or redescribed copy). A ``Tool`` is still
    callable like the original function; :meth:`run` is what ``execute_tools`` uses: it
    validates the model's arguments and runs sync functions in a worker thread.

    Attributes:
        fn: The function.
        name: The name the model calls it by.
        parallel: Whether calls may run concurrently with other parallel calls.
        timeout: Seconds a call may take before it is cancelled (``None``: no limit).
        terminal: Whether a successful call ends the agent, its result being the answer
            (``submit``).
    """

    fn: Callable[P, R]
    name: str
    parallel: bool
    timeout: float | None
    terminal: bool

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str,
        description: str | None = None,
        parallel: bool = False,
        timeout: float | None = None,
        terminal: bool = False,
        defer: bool = False,
    ) -> None:
        if isinstance(fn, Tool):
            raise ToolDefinitionError(
                f"{fn.name!r} is already a tool; use tool_with() to change it."
            )
        if not callable(fn):
            raise ToolDefinitionError(f"A tool needs a function, got {fn!r}.")
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise ToolDefinitionError(
                f"Tool {name!r} is a generator function; a tool must return its result "
                "(return a list or a string instead of yielding)."
            )
        self.fn = fn
        self.name = _check_name(name, "The name")
        self.parallel = bool(parallel)
        self.timeout = _check_timeout(timeout)
        self.terminal = bool(terminal)
        self._description = description
        self._is_async = _is_async(fn)
        # a sync function known never to block (the built-in ``submit``, ``think``) is
        # called on the event loop: a worker thread would cost more than the call
        self._inline = False
        self._spec: FunctionSpec | None = None
        self._info: ToolInfo | None = None
        for attr in _WRAPPER_ASSIGNMENTS:
            try:
                setattr(self, attr, getattr(fn, attr))
            except AttributeError:
                pass
        self.__wrapped__ = fn
        if not defer:
            self._build()

    @classmethod
    def from_info(
        cls,
        info: ToolInfo,
        fn: Callable[..., Any],
        *,
        parallel: bool = False,
        timeout: float | None = None,
        terminal: bool = False,
    ) -> Tool[..., Any]:
        """A tool with an explicit description and JSON schema (for dynamic tools).

        ``fn`` (sync or async) is called with the arguments as keyword arguments, after
        they are checked against ``info.parameters`` (required and unknown keys, JSON
        types, enums, bounds, nested objects and arrays; see the ``_jsonschema`` module).

        Raises:
            ToolDefinitionError: The name is invalid or the schema is not an object schema.
        """
        params = info.parameters
        if not isinstance(params, dict) or params.get("type") != "object":
            raise ToolDefinitionError(
                f"The parameters of tool {info.name!r} must be a JSON schema with "
                f'"type": "object", got {params!r}.'
            )
        _check_patterns(params, info.name)
        self: Tool[..., Any] = cls(
            fn, name=info.name, parallel=parallel, timeout=timeout, terminal=terminal, defer=True
        )
        self._info = info.model_copy(deep=True)
        return self

    @property
    def info(self) -> ToolInfo:
        """The tool as the model sees it: name, description and JSON schema."""
        if self._info is None:
            self._build()
            assert self._info is not None
        return self._info

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        return self.info.description

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (else it runs in a thread)."""
        return self._is_async

    def _build(self) -> None:
        # imported here: schema building is only needed once a tool is used or defined
        from ._docstrings import parse_docstring
        from ._schema import function_spec

        fn: Any = self.fn
        doc = parse_docstring(fn.func if isinstance(fn, functools.partial) else fn)
        if not (inspect.isroutine(fn) or isinstance(fn, functools.partial)):
            # a callable object: its class's docstring, and __call__'s for the parameters
            call_doc = parse_docstring(type(fn).__call__)
            doc.description = doc.description or call_doc.description
            doc.params = {**call_doc.params, **doc.params}
        spec = function_spec(fn, self.name, doc)
        try:
            sig_names = {p.lstrip("*") for p in inspect.signature(fn).parameters}
        except (TypeError, ValueError):  # pragma: no cover - function_spec read it already
            sig_names = set()
        unknown = sorted(set(doc.params) - sig_names)
        if unknown:
            warnings.warn(
                f"The docstring of tool {self.name!r} describes parameters it does not have: "
                f"{', '.join(unknown)}.",
                UserWarning,
                stacklevel=4,
            )
        self._spec = spec
        description = spec.description if self._description is None else self._description
        self._info = ToolInfo(
            name=self.name, description=description, parameters=copy.deepcopy(spec.parameters)
        )

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly (no validation, no thread)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        flags = "".join(
            f", {k}={v!r}"
            for k, v in (
                ("parallel", self.parallel),
                ("timeout", self.timeout),
                ("terminal", self.terminal),
            )
            if v
        )
        return f"Tool({self.name!r}{flags})"

    def _bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            from ._schema import signature_hint

            raise ToolArgumentsError(
                f"The arguments of tool {self.name!r} must be a JSON object, got "
                f"{type(arguments).__name__}. Expected: "
                f"{signature_hint(self.name, self.info.parameters)}"
            )
        args = dict(arguments)
        if has_null(args):  # the usual call has none: skip walking the schema
            args = drop_nulls(args, self.info.parameters)
        if self._info is None:
            self.info  # noqa: B018 - a deferred tool builds its spec (and info) on first use
        try:
            spec = self._spec
            return spec.bind(self.name, args) if spec is not None else self._check(args)
        except ToolArgumentsError:
            # a model may have sent an object or a list as JSON text: decode and retry
            params = self.info.parameters
            decoded = decode_json_strings(args, params)
            if decoded is None:
                raise
            try:
                return self._check(drop_nulls(decoded, params))
            except ToolArgumentsError:
                pass
            raise

    def _check(self, args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if self._spec is not None:
            return self._spec.bind(self.name, args)
        from ._jsonschema import validate_json
        from ._schema import signature_hint

        params = self.info.parameters
        errors = validate_json(args, params)
        if errors:
            lines = "\n".join(f"- {e}" for e in errors)
            raise ToolArgumentsError(
                f"Invalid arguments for tool {self.name!r}:\n{lines}\n"
                f"Expected: {signature_hint(self.name, params)}"
            )
        return [], args

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check and coerce the model's ``arguments``; return them by parameter name.

        Values are converted to the annotated types (a dict becomes the pydantic model,
        dataclass or TypedDict; ``"3"`` becomes ``3`` for an ``int``). A ``null`` for an
        optional parameter that does not accept ``None`` means "use the default".

        Raises:
            ToolArgumentsError: Missing, unexpected or invalid arguments; the message is
                written for the model.
        """
        args, kwargs = self._bind(arguments)
        if self._spec is not None and args:
            names = [p.name for p in self._spec.params if p.positional]
            return {**dict(zip(names, args, strict=True)), **kwargs}
        return kwargs

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and call the function with them.

        Async functions are awaited; sync ones run in a worker thread (with this
        context's contextvars), so they never block the event loop.

        Raises:
            ToolArgumentsError: The arguments are invalid.
        """
        args, kwargs = self._bind(arguments)
        return await self._invoke(args, kwargs)

    async def _invoke(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        fn: Callable[..., Any] = self.fn
        if self._is_async:
            result = fn(*args, **kwargs)
            if type(result) is CoroutineType:  # the usual case: skip the general check
                return await result
        elif self._inline:
            result = fn(*args, **kwargs)
        else:
            result = await run_in_thread(fn, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def _check_patterns(schema: Any, tool_name: str) -> None:
    """Refuse a ``pattern`` that is not a valid regular expression when the tool is made
    (else the error escapes the first call)."""
    if isinstance(schema, dict):
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as ex:
                raise ToolDefinitionError(
                    f"Tool {tool_name!r}: the pattern {pattern!r} is not a valid regular "
                    f"expression: {ex}"
                ) from None
        for value in schema.values():
            _check_patterns(value, tool_name)
    elif isinstance(schema, list):
        for value in schema:
            _check_patterns(value, tool_name)


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = False,
    timeout: float | None = None,
    terminal: bool = False,
    defer: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel: bool = False,
    timeout: float | None = None,
    terminal: bool = False,
    defer: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function (sync or async) into a :class:`Tool`.

    Use it bare (``@tool``) or with options (``@tool(name=..., parallel=True)``). The
    JSON schema of the parameters comes from the signature, the type hints and the
    docstring (Google, NumPy, reST or Epydoc style): the docstring's prose becomes the
    description, its parameter sections the parameters' descriptions. ``Field(...)``
    in ``Annotated`` or as a default overrides the docstring. Parameters with defaults
    are optional. ``*args`` and ``**kwargs`` are not part of the schema: the model
    cannot pass them and the function is called without them.

    A configurable tool is a factory returning a decorated function::

        def search(index: Index, limit: int = 10) -> Tool:
            @tool(parallel=True)
            async def search(query: str) -> list[str]:
                \"\"\"Search the index.

                Args:
                    query: What to look for.
                \"\"\"
                return await index.search(query, limit)

            return search

    Args:
        fn: The function (when used as ``@tool``).
        name: The name the model calls the tool by (default: the function's name).
        description: What the tool does (default: the docstring's prose).
        parallel: Whether calls may run concurrently with other parallel calls of the
            same message (default: one at a time, in order).
        timeout: Seconds a call may take; a call that takes longer is cancelled and the
            model is told it timed out. A sync function keeps running in its thread
            until it returns (threads cannot be stopped), but its result is discarded.
        terminal: A successful call ends the agent, its result being the answer.
        defer: Build the schema on first use instead of now (for modules that define
            many tools at import time); definition errors then surface on first use.

    Raises:
        ToolDefinitionError: The name is invalid, or a parameter's type cannot be
            expressed as JSON schema (unless ``defer``).
    """

    def wrap(f: Callable[P, R]) -> Tool[P, R]:
        tool_name = name if name is not None else _default_name(f)
        return Tool(
            f,
            name=tool_name,
            description=description,
            parallel=parallel,
            timeout=timeout,
            terminal=terminal,
            defer=defer,
        )

    if fn is not None:
        if isinstance(fn, str):
            raise ToolDefinitionError(f"Use @tool(name={fn!r}) to name a tool.")
        return wrap(fn)
    return wrap


def _default_name(fn: Callable[..., Any]) -> str:
    target: Any = fn.func if isinstance(fn, functools.partial) else fn
    found = getattr(target, "__name__", None)
    name = found if isinstance(found, str) else type(target).__name__
    return _check_name(name, "The function name")


def tool_with(
    tool: Tool[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, str] | None = None,
    parallel: bool | None = None,
    timeout: float | Literal[_Unset.UNSET] | None = UNSET,
) -> Tool[P, R]:
    """A copy of ``tool`` with another name, description or parameter descriptions.

    The original is not changed::

        lookup = tool_with(search, name="lookup", parameters={"query": "A product name."})

    Args:
        tool: The tool to copy.
        name: The new name.
        description: The new description.
        parameters: Parameter name -> new description.
        parallel: A new ``parallel`` flag.
        timeout: A new timeout (``None``: no limit).

    Raises:
        ToolDefinitionError: ``parameters`` names a parameter the tool does not have,
            or the new name is invalid.
    """
    from ._order import ordered

    info = tool.info
    new_params = copy.deepcopy(info.parameters)
    props: dict[str, Any] = new_params.get("properties") or {}
    for pname, pdesc in (parameters or {}).items():
        if pname not in props:
            valid = ", ".join(props) or "none"
            raise ToolDefinitionError(
                f"Tool {tool.name!r} has no parameter {pname!r} (its parameters: {valid})."
            )
        if not isinstance(pdesc, str):
            raise ToolDefinitionError(f"The description of {pname!r} must be a string.")
        props[pname] = ordered({**props[pname], "description": pdesc})
    new = copy.copy(tool)
    if name is not None:
        new.name = _check_name(name, "The name")
    if parallel is not None:
        new.parallel = bool(parallel)
    if timeout is not UNSET:
        new.timeout = _check_timeout(timeout)
    new._info = ToolInfo(
        name=new.name,
        description=info.description if description is None else description,
        parameters=new_params,
    )
    return new
