"""``span()``: group the events of a part of a run under a name."""

from __future__ import annotations

from contextvars import Token
from types import TracebackType

from .._errors import error_text
from ._context import _current_span, _pop, checkpoint_store
from ._current import _Scope, _scope
from ._events import SpanBegin, SpanEnd
from ._transcript import Transcript

__all__ = ["span"]


class span:
    """Group the events recorded within it: ``with span("reasoning"):`` (or ``async
    with``) records a :class:`SpanBegin`, then every event within carries the span's id,
    then a :class:`SpanEnd`. Store changes made within it are recorded before it ends.

    Args:
        name: What the span is.
        type: A kind of span (free-form, e.g. ``"agent"``, ``"step"``).
    """

    def __init__(self, name: str, *, type: str | None = None) -> None:
        if not isinstance(name, str) or not (type is None or isinstance(type, str)):
            raise TypeError(f"a span's name and type are strings, got {name!r}, {type!r}")
        self.name = name
        self.type = type
        self.id: str | None = None
        self._t: Transcript | None = None
        self._outer: str | None = None
        self._token: Token[_Scope | None] | None = None

    def __enter__(self) -> span:
        if self._token is not None:
            raise RuntimeError(f"span {self.name!r} is already open; create one per block")
        scope = _current_span()
        t = scope.transcript
        checkpoint_store(t)
        begin = t._record(SpanBegin(name=self.name, type=self.type))
        self.id, self._t, self._outer = begin.id, t, scope.span_id
        self._token = _scope.set(scope.within(begin.id))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        t, token = self._t, self._token
        assert t is not None and token is not None and self.id is not None
        try:
            checkpoint_store(t)
        finally:
            _pop(token)
            self._token = None
            error = error_text(exc) if exc is not None else None
            t._record(SpanEnd(begin=self.id, error=error, span_id=self._outer))

    async def __aenter__(self) -> span:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)
