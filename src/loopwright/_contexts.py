"""Context variables set for a ``with`` block and reset after it, as slotted objects.

``with var_set(var, value):`` and ``with var_pushed(var, item):`` do what a
``@contextmanager`` generator around ``token = var.set(...)`` / ``var.reset(token)``
does, in ~0.1 KB instead of a suspended generator's ~0.4 KB: every live run keeps the
ones it entered (its model and tool hooks, its store, transcript, default model, ...),
so at ten thousand live runs the difference is what counts.

Entering one while it is entered (nesting it in itself) raises ``RuntimeError``; once
left, it may be entered again. ``var_set`` sets nothing when the value in force is
already the one to set (the same object): no token, no new version of the context.

A frame suspended in a ``with`` block keeps the bound ``__exit__`` of each item (~64 B):
:data:`NOTHING`'s methods are static, so ``with NOTHING:`` keeps none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from typing import Any, Generic, TypeVar

__all__ = ["NOTHING", "all_of", "var_pushed", "var_set"]


class _Nothing:
    """``contextlib.nullcontext()`` (``as`` gives ``None``, sync or async) whose methods
    are static: looking them up makes no bound method for a suspended frame to keep."""

    __slots__ = ()

    @staticmethod
    def __enter__() -> None:
        return None

    @staticmethod
    def __exit__(*_: object) -> None:
        return None

    @staticmethod
    async def __aenter__() -> None:
        return None

    @staticmethod
    async def __aexit__(*_: object) -> None:
        return None


NOTHING = _Nothing()
"""A context that does nothing (reusable: it holds nothing)."""

# a var_set entered while its value was already in force: nothing to reset
_ALREADY: Any = object()

_T = TypeVar("_T")
_R = TypeVar("_R")


class var_set(Generic[_T, _R]):
    """``with var_set(var, value, gives):``: ``var`` is ``value`` within the block (and
    what it was, after it, also when the block raises); ``as`` gives ``gives``.

    When ``value`` is already in force (the same object: ``var.get()``, its default
    included) nothing is set; if code in the block set ``var`` otherwise without
    resetting it, leaving the block sets ``value`` back (as a reset would)."""

    __slots__ = ("_gives", "_token", "_value", "_var")

    def __init__(self, var: ContextVar[_T], value: _T, gives: _R) -> None:
        self._var = var
        self._value = value
        self._gives = gives
        self._token: Token[_T] | None = None

    def __enter__(self) -> _R:
        if self._token is not None:
            raise RuntimeError(f"{self._var.name} was set here already: enter a new one")
        var, value = self._var, self._value
        self._token = _ALREADY if _in_force(var) is value else var.set(value)
        return self._gives

    def __exit__(self, *_: object) -> None:
        token, self._token = self._token, None
        if token is _ALREADY:
            if _in_force(self._var) is not self._value:  # set in the block, not reset
                self._var.set(self._value)
        elif token is not None:
            self._var.reset(token)


def _in_force(var: ContextVar[Any]) -> Any:
    """``var``'s value (its default when unset), or ``_ALREADY`` when it has none."""
    try:
        return var.get()
    except LookupError:
        return _ALREADY


class var_pushed(Generic[_T]):
    """``with var_pushed(var, item):``: within the block ``var`` (a tuple) is what it was
    when the block was entered plus ``item`` at its end; ``as`` gives ``item``."""

    __slots__ = ("_item", "_token", "_var")

    def __init__(self, var: ContextVar[tuple[_T, ...]], item: _T) -> None:
        self._var = var
        self._item = item
        self._token: Token[tuple[_T, ...]] | None = None

    def __enter__(self) -> _T:
        if self._token is not None:
            raise RuntimeError(f"{self._var.name} was pushed here already: enter a new one")
        self._token = self._var.set((*self._var.get(), self._item))
        return self._item

    def __exit__(self, *_: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            self._var.reset(token)


def all_of(contexts: Sequence[AbstractContextManager[Any]]) -> AbstractContextManager[object]:
    """``contexts`` as one context, entered in order and left in reverse: the context
    itself when there is one (nothing more for a live run to keep), :data:`NOTHING` for
    none, an ``ExitStack`` for several."""
    if len(contexts) == 1:
        return contexts[0]
    return _entered(contexts) if contexts else NOTHING


@contextlib.contextmanager
def _entered(contexts: Sequence[AbstractContextManager[Any]]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
        yield
