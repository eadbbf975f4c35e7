"""``Tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, TypeVar, overload

from ..model import Model, ToolInfo
from ._autogen import settle_autogenerate
from ._bind import Validator, bind_arguments
from ._errors import ToolDefinitionError
from ._threads import run_in_thread
from ._tool_checks import ExceptionTypes, _check_errors, _check_name, _check_timeout, not_a_tool

if TYPE_CHECKING:
    from ._schema import FunctionSpec

__all__ = ["ExceptionTypes", "Tool", "not_a_tool", "tool"]  # (the checks: _tool_checks.py)

P = ParamSpec("P")
R = TypeVar("R")

_WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__doc__")


class _Unset(enum.Enum):
    UNSET = 0


UNSET: Literal[_Unset.UNSET] = _Unset.UNSET


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
        errors_to_model: Exception classes that, raised by the function, are errors for
            the model (like a :class:`ToolError`: the model is shown ``ValueError: ...``
            and the run goes on) instead of bugs that end the run.
    """

    fn: Callable[P, R]
    name: str
    parallel: bool
    timeout: float | None
    terminal: bool
    errors_to_model: tuple[type[Exception], ...]

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str,
        description: str | None = None,
        parallel: bool = False,
        timeout: float | None = None,
        terminal: bool = False,
        errors_to_model: ExceptionTypes = (),
        defer: bool = False,
        autogenerate: bool | str | Model = False,
        spec_prompt: str | None = None,
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
        self.errors_to_model = _check_errors(errors_to_model)
        self._description = description
        self._is_async = _is_async(fn)
        # a sync function known never to block (the built-in ``submit``, ``think``) is
        # called on the event loop: a worker thread would cost more than the call
        self._inline = False
        self._spec: FunctionSpec | None = None  # tools made from a function
        self._validator: Validator | None = None  # the spec, or a schema tool's SchemaSpec
        self._info: ToolInfo | None = None
        for attr in _WRAPPER_ASSIGNMENTS:
            try:
                setattr(self, attr, getattr(fn, attr))
            except AttributeError:
                pass
        self.__wrapped__ = fn
        # a spec written by a model (``_autogen``): built when the run writes it
        self.autogenerate, self.spec_prompt = settle_autogenerate(autogenerate, spec_prompt, name)
        defer = defer or self.autogenerate is not False
        if not defer:
            self._build()

    @property
    def needs_spec(self) -> bool:
        """Whether a model is still to write this tool's spec (``autogenerate``)."""
        return self.autogenerate is not False and self._info is None

    def use_spec(self, info: ToolInfo) -> None:
        """Use ``info`` (a spec a model wrote, checked by ``_autogen.check_spec``)."""
        from ._schema_spec import SchemaSpec

        self._info = info.model_copy(deep=True)
        self._validator = SchemaSpec(self.fn, self.name, self._info.parameters)

    @classmethod
    def from_info(
        cls,
        info: ToolInfo,
        fn: Callable[..., Any],
        *,
        parallel: bool = False,
        timeout: float | None = None,
        terminal: bool = False,
        errors_to_model: ExceptionTypes = (),
    ) -> Tool[..., Any]:
        """A tool with an explicit description and JSON schema (for dynamic tools).

        ``fn`` (sync or async) is called with the arguments as keyword arguments, after
        they are checked against ``info.parameters`` by the ``jsonschema`` library and
        fitted to ``fn``'s signature (see the ``_schema_spec`` module): an argument ``fn``
        cannot take, a missing one, or a float for an ``integer`` (other than an
        integral one like ``1.0``, which becomes ``1``) is an error for the model. A
        ``null`` for a parameter with a non-``None`` default whose annotation does not
        admit ``None`` means "use the default" (how a strict schema omits it).

        Raises:
            ToolDefinitionError: The name is invalid, the schema is not a valid JSON
                schema of an object, or it requires an argument ``fn`` cannot take.
        """
        from ._schema_spec import SchemaSpec

        params = info.parameters
        if not isinstance(params, dict) or params.get("type") != "object":
            raise ToolDefinitionError(
                f"The parameters of tool {info.name!r} must be a JSON schema with "
                f'"type": "object", got {params!r}.'
            )
        self: Tool[..., Any] = cls(
            fn,
            name=info.name,
            parallel=parallel,
            timeout=timeout,
            terminal=terminal,
            errors_to_model=errors_to_model,
            defer=True,
        )
        self._info = info.model_copy(deep=True)
        self._validator = SchemaSpec(fn, info.name, self._info.parameters)
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
        if self.autogenerate is not False:
            raise ToolDefinitionError(
                f"The spec of tool {self.name!r} is written by a model (autogenerate) and "
                "is not written yet: lw.run writes it before the agent starts; outside a "
                "run, await lw.write_tool_spec(tool) first."
            )
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
        self._spec = self._validator = spec
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
                ("errors_to_model", self.errors_to_model),
            )
            if v
        )
        return f"Tool({self.name!r}{flags})"

    def _bind(self, arguments: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        validator = self._validator
        if validator is None:  # a deferred tool builds its spec on first use
            self._build()
            validator = self._validator
            assert validator is not None
        return bind_arguments(self.name, validator, arguments)

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
        if args:
            assert self._validator is not None
            names = self._validator.positional
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
    errors_to_model: ExceptionTypes = (),
    defer: bool = False,
    autogenerate: bool | str | Model = False,
    spec_prompt: str | None = None,
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
    errors_to_model: ExceptionTypes = (),
    defer: bool = False,
    autogenerate: bool | str | Model = False,
    spec_prompt: str | None = None,
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
        errors_to_model: Exception classes (one, or a tuple) that, raised by the
            function, are errors for the model rather than bugs: the model is shown
            ``ValueError: <message>`` and the run goes on. For tools wrapping code that
            reports bad input with its own exceptions (``errors_to_model=(ValueError,
            KeyError)``), without a wrapper that turns them into :class:`ToolError`.
        defer: Build the schema on first use instead of now (for modules that define
            many tools at import time); definition errors then surface on first use.
        autogenerate: ``True`` (the run's model), a model's name or a :class:`Model`: a
            model writes the description and JSON schema from the function's source
            (for a function without type hints or docstring). ``lw.run`` writes it
            before the agent starts, cached in the run store by the function's version;
            a spec that does not match the signature is refused. See ``tools/_autogen``.
        spec_prompt: With ``autogenerate``: the prompt that writes the spec (default
            ``DEFAULT_SPEC_PROMPT``; ``{source}``, ``{name}``, ``{parameters}``,
            ``{required}`` are filled in).

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
            errors_to_model=errors_to_model,
            defer=defer,
            autogenerate=autogenerate,
            spec_prompt=spec_prompt,
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
