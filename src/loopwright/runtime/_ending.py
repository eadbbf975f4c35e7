"""How a scope ended, said once: its ``LimitEvent`` / ``ErrorEvent`` and its row values.

A limit or an error is recorded exactly once, by the scope that owns it:

- an error by the innermost scope it ends (where it was raised). When the error leaves
  that scope, the scope tells the scope around it ("recorded"), which, ended by the same
  error, records only its status, and passes the word on as the error leaves it too;
- a limit by the scope of the run it belongs to (the run nesting depth it was entered
  at, ``Limit.depth``; a limit entered outside any run belongs to the outermost). A run
  nested in another that meets the outer run's limit lets it pass unrecorded; the outer
  run records it. A run that ends on its own limit returns normally (``state.limit``)
  and tells the scope around it, so that an eval sample finishing with that
  ``state.limit`` does not record it again.

What a scope was told is kept on the scope (a list of the objects themselves, compared
by identity, dropped with the scope), and only what leaves a scope is told: an error an
eval sample handles is not passed to the eval's run. No marks on exception objects, no
table keyed by ``id()``.
"""

from __future__ import annotations

import asyncio
import json
import traceback
from collections.abc import Sequence
from typing import Any

from ..limits import Limit, LimitExceededError, LimitInfo
from ..log import RunEnd, RunStatus, json_text
from ..model import ChatMessage
from ..model._redact import MAX_ERROR, error_summary
from ..transcripts import ErrorEvent, LimitEvent, Transcript

__all__ = ["ScopeEnding"]


# the row of a scope not yet ended: one for all (a frozen record; an end replaces it)
_RUNNING = RunEnd(status="running")


class ScopeEnding:
    """How one scope (a run, a sample, a span) ended.

    ``depth`` is the run nesting depth the scope owns limits of (``None``: a scope that is
    not a run, e.g. an eval sample or a bare ``lw.recording()``, records every limit that
    reaches it); ``outer`` is the ending of the scope around it, told what this one
    recorded.
    """

    __slots__ = ("depth", "done", "outer", "row", "said", "told")

    def __init__(self, outer: ScopeEnding | None, depth: int | None) -> None:
        self.outer, self.depth = outer, depth
        self.done = False
        self.row = _RUNNING
        # (made when first needed: most scopes are told nothing; a list, as an outer run
        # may be told once per step, by an agent used as a tool that ends on its limit)
        self.told: list[object] | None = None  # errors and limits scopes inside it recorded
        self.said: list[object] | None = None  # the error and limit it ended on (recorded)

    @property
    def status(self) -> RunStatus:
        return self.row.status

    def owns(self, limit: Limit) -> bool:
        """Whether a limit is this scope's to record (see the module's docstring)."""
        if self.depth is None:
            return True
        return limit.depth == self.depth or (limit.depth == 0 and self.depth == 1)

    def _was_told(self, x: object) -> bool:
        return self.told is not None and any(t is x for t in self.told)

    def _tell(self, *xs: object) -> None:
        if xs:
            if self.told is None:
                self.told = []
            self.told.extend(xs)

    def _said(self) -> list[object]:
        return self.said if self.said is not None else []

    def leave(self, exc: BaseException | None, *, pass_limit: bool) -> None:
        """The scope is left (raising ``exc``): tell the scope around it what it recorded
        that leaves with it — the error it raises, or (``pass_limit``: a run returning its
        state) the limit it ended on."""
        outer = self.outer
        if outer is None:
            return
        if exc is not None:
            if any(x is exc for x in self._said()):
                outer._tell(exc)
                if isinstance(exc, LimitExceededError):
                    outer._tell(exc.info)
        elif pass_limit and self.row.status == "limit":
            outer._tell(*(x for x in self._said() if isinstance(x, LimitInfo)))

    def set(
        self,
        t: Transcript,
        *,
        status: RunStatus | None,
        output: Any,
        messages: Sequence[ChatMessage] | None,
        error: BaseException | str | None,
        limit: LimitInfo | LimitExceededError | None,
        reason: str | None = None,
    ) -> None:
        """Say how the scope ended: record the limit's and the error's events (unless a
        scope inside recorded them), the final messages, and the row values (``reason``:
        the ``error`` column of a scope that ended with no error, ``stopped`` or
        ``waiting``, saying why; no event)."""
        limit_json = None
        if limit is not None:
            info = limit.info if isinstance(limit, LimitExceededError) else limit
            if not (self._was_told(limit) or self._was_told(info)):
                t._record(
                    LimitEvent(
                        type=str(info.type),
                        limit=info.limit,
                        value=info.value,
                        message=info.message,
                    )
                )
            self.said = [*self._said(), limit, info]
            limit_json = info.model_dump_json()
        error_text = None
        if error is not None:
            if not self._was_told(error):
                t._record(_error_event(error))
            self.said = [*self._said(), error]
            error_text = error_summary(error)
        elif reason is not None:
            error_text = error_summary(reason)
        ids = None
        if messages is not None:
            t.add_messages(messages)
            ids = json.dumps([m.id for m in messages])
        self.row = RunEnd(
            status=status
            or ("limit" if limit is not None else "error" if error is not None else "success"),
            output=json_text(output),
            messages=ids,
            error=error_text,
            limit=limit_json,
        )
        self.done = True

    def from_exception(self, t: Transcript, exc: BaseException | None) -> None:
        """How the scope ended when its block was left (unless :meth:`set` said it)."""
        if self.done:
            return
        if exc is None:
            self.set(t, status=None, output=None, messages=None, error=None, limit=None)
        elif isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            self.set(t, status="cancelled", output=None, messages=None, error=exc, limit=None)
        elif isinstance(exc, LimitExceededError):
            if not self.owns(exc.limit):
                # the limit of a run around this one: that run records it
                self.row, self.done = RunEnd(status="limit", limit=exc.info.model_dump_json()), True
                return
            self.set(t, status="limit", output=None, messages=None, error=None, limit=exc)
        else:
            self.set(t, status="error", output=None, messages=None, error=exc, limit=None)


def _error_event(error: BaseException | str) -> ErrorEvent:
    tb = None
    if isinstance(error, BaseException) and error.__traceback__ is not None:
        text = "".join(traceback.format_exception(error))
        tb = error_summary(text, tail=MAX_ERROR * 3 // 4)
    name = type(error).__name__ if isinstance(error, BaseException) else "Error"
    return ErrorEvent(error=name, message=error_summary(str(error)), traceback=tb)
