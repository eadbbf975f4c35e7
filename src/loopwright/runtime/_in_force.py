"""What a run scope puts in force while it is open: the scope itself (``_active``: what
``current_recording()`` returns), its store and transcript (unless they are the run's
around it) and its cost tally; and the run the next one opened continues (``reopening``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from .._contexts import var_set
from ..log._resume_point import ResumePoint
from ..model import model_hook
from ..stores import Store, store_context
from ..transcripts import current_transcript, transcript_context

if TYPE_CHECKING:
    from ._scope import RunScope

__all__ = ["InForce", "current_recording", "reopening"]

_active: ContextVar[RunScope | None] = ContextVar("loopwright_run_scope", default=None)

# the unfinished run the next run opened in this context continues (lw.resume)
_reopen: ContextVar[ResumePoint | None] = ContextVar("loopwright_reopen", default=None)


def reopening(point: ResumePoint) -> AbstractContextManager[None]:
    """The next run opened in this context is ``point``'s run, resumed: same id and row
    (``running`` again, its ``resumes`` counted), its store's recorded state, its events
    going on after those recorded, a ``resume`` info event first (``runtime/_resume.py``)."""
    return var_set(_reopen, point, None)


def current_recording() -> RunScope | None:
    """The innermost run scope of this context (a run, a sample, or a nested run's
    span), if any."""
    return _active.get()


class InForce:
    """A scope's store and transcript (unless they are the run's around it), the scope
    itself and its cost tally, in force from entering until the scope is left
    (``RunScope._leave``), innermost first, each even when one raises. (A slotted
    object, not a generator: every live run keeps one.)"""

    __slots__ = ("_active", "_cost", "_scope", "_store", "_transcript")

    def __init__(self, scope: RunScope) -> None:
        self._scope = scope
        # (both set, or neither: the scope's own store and transcript)
        self._store: AbstractContextManager[Store] | None = None
        self._transcript: transcript_context | None = None

    def __enter__(self) -> None:
        scope = self._scope
        if scope._transcript is not current_transcript():
            store, transcript = store_context(scope.store), transcript_context(scope.transcript)
            store.__enter__()
            try:
                transcript.__enter__()
            except BaseException:
                store.__exit__(None, None, None)
                raise
            self._store, self._transcript = store, transcript
        # (setting context variables cannot fail: nothing to undo from here)
        self._active = _active.set(scope)
        self._cost = model_hook(scope.cost)
        self._cost.__enter__()

    def __exit__(self, *_: object) -> None:
        try:
            try:
                self._cost.__exit__(None, None, None)
            finally:
                _active.reset(self._active)
        finally:
            store, transcript = self._store, self._transcript
            if store is not None and transcript is not None:
                try:
                    transcript.__exit__(None, None, None)
                finally:
                    store.__exit__(None, None, None)
