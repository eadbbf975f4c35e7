"""The current transcript: ``transcript()``, ``transcript_context()``, spans' scopes,
store checkpoints, and the observers of every transcript."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import Token
from typing import Any

from .._contexts import var_pushed
from ..model import model_hook
from ..stores import current_store
from ._current import _hooked, _observers, _Scope, _scope
from ._events import Event, StoreEvent
from ._transcript import EventSubscriber, Transcript, _Root

__all__ = [
    "checkpoint_store",
    "current_transcript",
    "observe_transcripts",
    "on_transcript_open",
    "transcript",
    "transcript_context",
]

_log = logging.getLogger("loopwright.transcripts")


# --- the current transcript -------------------------------------------------------------


def transcript() -> Transcript:
    """The current run's transcript.

    Outside a run (or a :func:`transcript_context`), a new transcript is created for the
    current context and returned from then on; nothing records model or tool calls into
    it.
    """
    scope = _scope.get()
    if scope is None:
        from ._hooks import install_sandbox_recorder

        install_sandbox_recorder()
        t = Transcript()
        _scope.set(_Scope(t, t.events, t.span_id))
        return t
    return scope.transcript


def current_transcript() -> Transcript | None:
    """The transcript installed in this context, or ``None`` (never creates one)."""
    scope = _scope.get()
    return scope.transcript if scope is not None else None


def _push(t: Transcript, events: list[Event], span_id: str | None) -> Token[_Scope | None]:
    return _scope.set(_Scope(t, events, span_id))


def _pop(token: Token[_Scope | None]) -> None:
    try:
        _scope.reset(token)
    except ValueError:  # reset in another context than set: restore by value
        _scope.set(token.old_value if token.old_value is not Token.MISSING else None)


def _current_span() -> _Scope:
    """Where events are recorded now (the current transcript's top level, outside any
    span: one is made if there is none)."""
    scope = _scope.get()
    if scope is None:
        t = transcript()
        return _Scope(t, t.events, t.span_id)
    return scope


def checkpoint_store(t: Transcript | None = None) -> StoreEvent | None:
    """Record the current store's changes since its last checkpoint as a
    :class:`StoreEvent` in ``t`` (default: the current transcript), if there are any
    and ``t`` records changes (see ``record_calls``)."""
    s = current_store()
    if s is None or not s.dirty:
        return None
    t = t if t is not None else current_transcript()
    if t is None or not t._root.record_calls:
        return None
    changes = s.checkpoint()
    if not changes:
        return None
    return t._record(StoreEvent(store=s.id, changes=changes))


class transcript_context:
    """``with transcript_context(t):``: make ``t`` the current transcript within this
    context.

    Model and tool calls made in the context are recorded into the current transcript
    (unless it was made with ``record_calls=False``), and Python log records are captured.
    (A slotted object, not a generator: every live run keeps the one it entered.)
    """

    __slots__ = ("_hooked", "_models", "_root", "_t", "_token", "_tools")

    def __init__(self, t: Transcript) -> None:
        self._t = t
        self._token: Token[_Scope | None] | None = None
        self._root: _Root | None = None
        # the hooks it entered (two slots, not a tuple: a live run keeps its context)
        self._models: AbstractContextManager[Any] | None = None
        self._tools: AbstractContextManager[Any] | None = None
        self._hooked: Token[bool] | None = None

    def __enter__(self) -> Transcript:
        from ..tools import tool_hook
        from ._hooks import MODEL_HOOK, TOOL_HOOK, install_log_handler, install_sandbox_recorder

        if self._token is not None:
            raise RuntimeError("this transcript_context is entered already: enter a new one")
        install_log_handler()
        install_sandbox_recorder()
        t = self._t
        root = self._root = t._root if t.parent is None else None
        if root is not None:
            if not root.open_count and _openers:
                for opener in list(_openers):
                    opener(t)
            root.open_count += 1
        # the hooks that record calls, once per context (setting a context variable
        # cannot fail: nothing to undo between these lines)
        if not _hooked.get() and t._root.record_calls:
            models = self._models = model_hook(MODEL_HOOK)
            tools = self._tools = tool_hook(TOOL_HOOK)
            models.__enter__()
            tools.__enter__()
            self._hooked = _hooked.set(True)
        else:
            self._models = self._tools = self._hooked = None
        self._token = _push(t, t.events, t.span_id)
        return t

    def __exit__(self, *_: object) -> None:
        token, self._token = self._token, None
        if token is None:
            return
        try:
            try:
                _pop(token)
                if self._hooked is not None:
                    _hooked.reset(self._hooked)
            finally:
                models, tools = self._models, self._tools
                self._models = self._tools = None
                if models is not None and tools is not None:
                    try:  # left innermost first, each even if one raises
                        tools.__exit__(None, None, None)
                    finally:
                        models.__exit__(None, None, None)
        finally:
            if self._root is not None:
                _closed(self._root)


def _closed(root: _Root) -> None:
    root.open_count -= 1
    if root.open_count or not root.on_close:
        return
    callbacks, root.on_close = root.on_close, ()
    for callback in callbacks:
        try:
            callback()
        except Exception:
            _log.exception("a transcript's close callback %r failed", callback)


_openers: list[Callable[[Transcript], None]] = []


def on_transcript_open(opener: Callable[[Transcript], None]) -> Callable[[], None]:
    """Call ``opener(t)`` for every top-level transcript (a run's, an eval sample's, a
    subtask's outside any run) when it opens, in this whole process, from now on; returns
    a function that stops it. The tracing of ``loopwright.otel`` uses it.

    ``opener`` runs where the transcript's first :func:`transcript_context` is entered,
    before the transcript becomes the current one (so :func:`current_transcript` is the
    enclosing run's, if any) and before its first event; it may subscribe to ``t`` and
    register :meth:`Transcript.on_close`. It must be quick; an opener that raises is a
    bug and propagates. With no opener, opening a transcript costs one list test.
    """
    _openers.append(opener)

    def stop() -> None:
        with contextlib.suppress(ValueError):
            _openers.remove(opener)

    return stop


def observe_transcripts(subscriber: EventSubscriber) -> AbstractContextManager[EventSubscriber]:
    """Subscribe ``subscriber`` to every run transcript created within this context
    (e.g. by ``run()``); the console display uses it."""
    return var_pushed(_observers, subscriber)
