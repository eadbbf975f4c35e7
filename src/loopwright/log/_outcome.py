"""How a run or sample ended, as the run store keeps it: its status and row values.

The run scope (``runtime/``) decides how a run ended and records its ``LimitEvent`` or
``ErrorEvent`` once; this module only says what the run store writes for it.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ..model import ChatMessage
from ..transcripts import Event
from ._serialize import sql_params
from ._writer import RunWriter

__all__ = ["COST_KEY", "RunEnd", "RunStatus", "Sink", "json_text", "mark_failed"]

COST_KEY = "_cost"
"""The key of a run's metadata under which its end writes its cost
(``{"dollars": float | null, "unpriced_calls": int}``); readers move it to
``RunInfo.cost`` / ``RunInfo.unpriced_calls``."""

RunStatus: TypeAlias = Literal[
    "running", "success", "error", "cancelled", "limit", "stopped", "waiting"
]
"""A run's (or sample's) status: ``running`` until it finishes (a run whose process died
stays ``running``; readers report it as ``interrupted``); ``stopped`` when a hook ended
it (``lw.StopRun``); ``waiting`` when an approval policy deferred calls: the run waits
for a person's decision (the ``approvals`` table, ``_approvals.py``)."""


def json_text(value: Any) -> str | None:
    """``value`` as the JSON text of a row's column (``repr`` for what is not JSON); a
    float that is not finite as null (SQLite's JSON functions, which the store uses on
    these columns, refuse ``NaN`` and ``Infinity``: a run's end updates its metadata)."""
    if value is None:
        return None
    from pydantic_core import to_jsonable_python

    try:
        # (a value that is not JSON as its repr, in its place: the rest stays data)
        data = to_jsonable_python(value, inf_nan_mode="null", fallback=repr)
        return json.dumps(data, separators=(",", ":"), allow_nan=False)
    except Exception:
        return json.dumps(repr(value))


@dataclass(frozen=True, slots=True)
class RunEnd:
    """The columns a run's (or sample's) row gets when it ends, as written."""

    status: RunStatus
    output: str | None = None
    """JSON text."""
    messages: str | None = None
    """The final messages' ids, as a JSON list (the messages are rows of their own)."""
    error: str | None = None
    """The error, redacted and bounded."""
    limit: str | None = None
    """The ``LimitInfo``, as JSON."""
    cost: float | None = None
    """Dollars of the run's priced model calls (``None``: none was priced)."""
    unpriced_calls: int = 0
    """Model calls whose price was not known (not in ``cost``)."""


def mark_failed(path: Path, sql: str, params: tuple[Any, ...]) -> None:
    """Try once, briefly, to record how a run whose store failed ended (it may work:
    the failure may have passed, or have been this process's connection's alone); its
    values as the writer writes them (:func:`sql_params`: the secrets learnt redacted).
    A file no longer there is not made again (``mode=rw``): there is nothing to record in."""
    import sqlite3
    from urllib.parse import quote

    from ._fork import file_locked

    uri = f"file:{quote(os.fsencode(path.absolute()))}?mode=rw"
    try:
        with file_locked():  # (a fork waits for it: see _fork.py)
            conn = sqlite3.connect(uri, uri=True, timeout=1.0, isolation_level=None)
            try:
                conn.execute(sql, sql_params(params))
            finally:
                conn.close()
    except sqlite3.Error as ex:
        logging.getLogger("loopwright.log").debug(
            "the run store %s failed; the run's end is not recorded (%s)", path, ex
        )


class Sink:
    """Subscribes a writer to a transcript: every event and message becomes a row.

    An event is heard twice when it is recorded pending (a model or tool call in
    flight) and then completed. The second time it is put on the writer's queue only if
    the writer took a batch off it since the first: else its first put is still queued,
    and the writer, which serialises an event when it writes it, writes the completed
    event from it (one row, as before: the row is updated by its id).
    """

    __slots__ = ("mseq", "pending", "run_id", "sample", "seq", "taken", "writer")

    def __init__(self, writer: RunWriter, run_id: str, sample: str, seq: itertools.count[int]):
        self.writer, self.run_id, self.sample, self.seq = writer, run_id, sample, seq
        self.mseq = itertools.count()
        self.pending: Event | None = None  # the last event put while pending
        self.taken = -1  # the writer's count of batches taken when it was put

    def on_event(self, event: Event) -> None:
        writer = self.writer
        taken = writer.batches_taken()  # read before the put: see batches_taken
        if event is self.pending:
            self.pending = None
            if taken == self.taken:
                return
        writer.event(self.run_id, self.sample, next(self.seq), event)
        if getattr(event, "pending", None):
            self.pending, self.taken = event, taken

    def on_message(self, message: ChatMessage) -> None:
        self.writer.message(self.run_id, self.sample, next(self.mseq), message)
