"""``@subtask``: isolated units of work, recorded in the parent transcript.

``fork()`` (agents on copies of a state, each a subtask) is in ``agent/_fork.py``.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from pydantic import JsonValue

from .._errors import error_text
from ..stores import Store, store_context
from ._context import checkpoint_store, current_transcript, transcript_context
from ._events import SubtaskEvent
from ._transcript import Transcript

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["run_subtask", "subtask"]

P = ParamSpec("P")
R = TypeVar("R")


def _json(value: Any) -> JsonValue:
    from pydantic_core import to_jsonable_python

    try:
        result: JsonValue = to_jsonable_python(value)
    except Exception:
        return repr(value)
    return result


_input_adapter: TypeAdapter[dict[str, JsonValue]] | None = None


def _checked(input: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A caller's ``input`` for the event, checked to be JSON (the event, a plain
    dataclass, does not validate it; the run store could not write it).

    Raises:
        pydantic.ValidationError: It is not a mapping of names to JSON values.
    """
    global _input_adapter
    if _input_adapter is None:
        from pydantic import TypeAdapter

        _input_adapter = TypeAdapter(dict[str, JsonValue])
    return _input_adapter.validate_python(input)


def _arguments(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, JsonValue]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {"args": _json(list(args)), "kwargs": _json(dict(kwargs))}
    return {name: _json(value) for name, value in bound.arguments.items()}


async def run_subtask(
    fn: Callable[..., Awaitable[R]],
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    type: str = "subtask",
    store: Store | None = None,
    input: Mapping[str, JsonValue] | None = None,
    result: Callable[[R], JsonValue] | None = None,
) -> R:
    """Run ``await fn(*args, **kwargs)`` as a subtask: with a store and a transcript of
    its own, recorded as a :class:`SubtaskEvent` (with its events nested) in the current
    transcript. :func:`subtask` is the decorator form.

    Args:
        fn: The async function to run.
        args: Its positional arguments.
        kwargs: Its keyword arguments.
        name: The subtask's name (default: the function's name).
        type: The kind of subtask recorded (``"subtask"``, ``"fork"``).
        store: The subtask's store (default: a new, empty one).
        input: What to record as its input (default: its arguments, as JSON).
        result: Turns its return value into what is recorded (default: the value as JSON).
    """
    kwargs = kwargs or {}
    parent = current_transcript()
    label = name or getattr(fn, "__name__", None) or type
    if not isinstance(label, str) or not isinstance(type, str):
        raise TypeError(f"a subtask's name and type are strings, got {label!r}, {type!r}")
    ev = SubtaskEvent(
        name=label,
        type=type,
        input=_checked(input) if input is not None else _arguments(fn, args, kwargs),
        pending=True,
    )
    if parent is not None:
        checkpoint_store(parent)
        parent._record(ev)
        child = Transcript(_parent=parent, _container=ev)
    else:
        child = Transcript()
        child.events = ev.events
    own_store = store if store is not None else Store()
    started = time.perf_counter()
    working = child.working_time()
    try:
        with store_context(own_store), transcript_context(child):
            try:
                value = await fn(*args, **kwargs)
            finally:
                checkpoint_store(child)
        # (as JSON whatever ``result`` gives: the event is not validated when set)
        ev.result = _json(result(value) if result is not None else value)
        return value
    except BaseException as ex:
        ev.error = error_text(ex)
        raise
    finally:
        ev.duration = time.perf_counter() - started
        ev.working_time = max(0.0, child.working_time() - working)
        ev.pending = None
        if parent is not None:
            parent._update(ev)


@overload
def subtask(fn: Callable[P, Awaitable[R]], /) -> Callable[P, Coroutine[Any, Any, R]]: ...
@overload
def subtask(
    *, name: str | None = None
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]: ...
def subtask(fn: Callable[P, Awaitable[R]] | None = None, /, *, name: str | None = None) -> Any:
    """Make an async function a subtask (``@subtask`` or ``@subtask(name="x")``).

    Each call runs with a new, empty store and a transcript of its own (``store()`` and
    ``transcript()`` inside return those), and lands in the caller's transcript as a
    :class:`SubtaskEvent` with the subtask's name, its arguments, its result and its
    events. Subtasks can run in parallel with ``asyncio.gather``.
    """

    def wrap(f: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        if not inspect.iscoroutinefunction(f):
            raise TypeError(f"@subtask needs an async function, got {f!r}")

        @functools.wraps(f)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            return await run_subtask(f, args, kwargs, name=name or f.__name__)

        return run

    return wrap(fn) if fn is not None else wrap
