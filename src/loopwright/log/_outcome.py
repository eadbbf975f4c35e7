"""How a recorded run or sample ended, and the rows its transcript becomes."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import traceback
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeGuard

from ..limits import LimitExceededError, LimitInfo
from ..model import ChatMessage
from ..model._redact import MAX_ERROR, error_summary
from ..transcripts import ErrorEvent, Event, LimitEvent, Transcript
from ._writer import RunWriter

__all__ = ["Outcome", "RunStatus", "Sink", "json_text", "mark_failed"]

RunStatus: TypeAlias = Literal["running", "success", "error", "cancelled", "limit"]
"""A run's (or sample's) status: ``running`` until it finishes (a run whose process died
stays ``running``; readers report it as ``interrupted``)."""


def json_text(value: Any) -> str | None:
    if value is None:
        return None
    from pydantic_core import to_jsonable_python

    try:
        data = to_jsonable_python(value)
    except Exception:
        data = repr(value)
    return json.dumps(data, separators=(",", ":"))


def _error_text(error: BaseException | str) -> str:
    """A run's error as recorded: redacted and bounded (``model/_redact.py``)."""
    return error_summary(error)


def _is_limit(error: BaseException) -> TypeGuard[LimitExceededError]:
    return isinstance(error, LimitExceededError)


def mark_failed(path: Path, sql: str, params: tuple[Any, ...]) -> None:
    """Try once, briefly, to record how a run whose store failed ended (it may work:
    the failure may have passed, or have been this process's connection's alone)."""
    import sqlite3

    try:
        conn = sqlite3.connect(str(path), timeout=1.0, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()
    except sqlite3.Error as ex:
        logging.getLogger("loopwright.log").debug(
            "the run store %s failed; the run's end is not recorded (%s)", path, ex
        )


class Sink:
    """Subscribes a writer to a transcript: every event and message becomes a row."""

    def __init__(self, writer: RunWriter, run_id: str, sample: str, seq: itertools.count[int]):
        self.writer, self.run_id, self.sample, self.seq = writer, run_id, sample, seq
        self.mseq = itertools.count()

    def on_event(self, event: Event) -> None:
        self.writer.event(self.run_id, self.sample, next(self.seq), event)

    def on_message(self, message: ChatMessage) -> None:
        self.writer.message(self.run_id, self.sample, next(self.mseq), message)


# what a nested run already recorded: exceptions carry a mark, LimitInfos are remembered
_RECORDED = "_loopwright_recorded"
_recorded_infos: weakref.WeakValueDictionary[int, LimitInfo] = weakref.WeakValueDictionary()


def _recorded(x: object) -> bool:
    """Whether an error or a limit was already recorded as an event (by a nested run)."""
    if isinstance(x, BaseException):
        return bool(getattr(x, _RECORDED, False))
    return isinstance(x, LimitInfo) and _recorded_infos.get(id(x)) is x


def _mark_recorded(x: object) -> None:
    if isinstance(x, LimitInfo):
        _recorded_infos[id(x)] = x
    elif isinstance(x, BaseException):
        try:
            setattr(x, _RECORDED, True)
        except AttributeError:  # an exception type without a __dict__
            pass


class Outcome:
    """How a run or sample ended; turned into events and a row update."""

    def __init__(self) -> None:
        self.done = False
        self.status: RunStatus = "running"
        self.output: str | None = None
        self.messages: str | None = None
        self.error: str | None = None
        self.limit: str | None = None

    def set(
        self,
        t: Transcript,
        *,
        status: RunStatus | None,
        output: Any,
        messages: Sequence[ChatMessage] | None,
        error: BaseException | str | None,
        limit: LimitInfo | LimitExceededError | None,
    ) -> None:
        if limit is not None:
            info = limit.info if isinstance(limit, LimitExceededError) else limit
            # said once: a run nested in a sample or a tool may have recorded this very
            # limit already (the same exception, or the same LimitInfo in its state)
            if not (_recorded(limit) or _recorded(info)):
                t.record(
                    LimitEvent(
                        type=str(info.type),
                        limit=info.limit,
                        value=info.value,
                        message=info.message,
                    )
                )
            _mark_recorded(limit)
            _mark_recorded(info)
            self.limit = info.model_dump_json()
        if error is not None:
            if not _recorded(error):
                tb = None
                if isinstance(error, BaseException) and error.__traceback__ is not None:
                    text = "".join(traceback.format_exception(error))
                    tb = error_summary(text, tail=MAX_ERROR * 3 // 4)
                name = type(error).__name__ if isinstance(error, BaseException) else "Error"
                message = error_summary(str(error))
                t.record(ErrorEvent(error=name, message=message, traceback=tb))
                _mark_recorded(error)
            self.error = _error_text(error)
        if messages is not None:
            t.add_messages(messages)
            self.messages = json.dumps([m.id for m in messages])
        self.output = json_text(output)
        self.status = status or (
            "limit" if limit is not None else "error" if error is not None else "success"
        )
        self.done = True

    def from_exception(self, t: Transcript, exc: BaseException | None) -> None:
        if self.done:
            return
        if exc is None:
            self.set(t, status=None, output=None, messages=None, error=None, limit=None)
        elif isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
            self.set(t, status="cancelled", output=None, messages=None, error=exc, limit=None)
        elif _is_limit(exc):
            self.set(t, status="limit", output=None, messages=None, error=None, limit=exc)
        else:
            self.set(t, status="error", output=None, messages=None, error=exc, limit=None)
