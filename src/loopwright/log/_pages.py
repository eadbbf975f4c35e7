"""Reading the run store a page at a time: runs, samples and events by keyset queries.

What a viewer needs to open a run of a million events as fast as one of ten: every read
here is one indexed SQLite query bounded by ``LIMIT`` (events by ``(run_id, sample,
seq)``, an event by ``(run_id, id)``), never a scan of a whole run.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..transcripts import Event
from ._db import RunStoreError, connect, reading, resolve_db
from ._info import (
    DAMAGED,
    RUN_COLUMNS,
    SAMPLE_COLUMNS,
    RunInfo,
    SampleInfo,
    listed_run,
    text_or_bytes,
)

if TYPE_CHECKING:
    from ..model import ChatMessage
    from ._reader import RunLog

__all__ = [
    "EventRow",
    "event_at",
    "event_bounds",
    "event_page",
    "last_messages",
    "runs_page",
    "samples_page",
    "store_at",
    "usage_totals",
]

MAX_PAGE = 1000
"""The most rows one page reads."""

Damaged = Callable[[RunStoreError], Event]
"""What stands for an event row that cannot be read, made from why (a page shows it
instead of failing whole: one damaged row hides no other)."""


@dataclass(frozen=True)
class EventRow:
    """An event as a page holds it: its position in the run (``seq``, increasing in the
    order events began) and the event (nested events are rows of their own)."""

    seq: int
    sample: str
    event: Event


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _bound(limit: int) -> int:
    return max(1, min(int(limit), MAX_PAGE))


def runs_page(
    db: str | os.PathLike[str] | None = None,
    *,
    offset: int = 0,
    limit: int = 50,
    status: str | None = None,
    model: str | None = None,
    name: str | None = None,
    search: str | None = None,
) -> list[RunInfo]:
    """A page of the runs in the run store, newest first; a row that cannot be read is
    a placeholder whose ``status`` is ``damaged`` (as :func:`~loopwright.list_runs`
    lists it).

    Args:
        db: The run store.
        offset: Runs to skip.
        limit: At most this many (at most 1,000).
        status: Only runs with this status (``interrupted`` runs are stored as
            ``running``, ``damaged`` ones with any: which one a run is is known once
            read).
        model: Only runs of this model.
        name: Only runs with this name.
        search: Only runs whose id, name, model or input contains this text.
    """
    path = resolve_db(db)
    limit, offset = _bound(limit), max(0, int(offset))
    where, params = ["1"], []
    for column, value in (("name", name), ("model", model)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if status and status != DAMAGED:
        where.append("status = ?")
        params.append("running" if status == "interrupted" else status)
    if search:
        where.append(
            "(id LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\' OR model LIKE ? ESCAPE '\\' "
            "OR input LIKE ? ESCAPE '\\')"
        )
        params.extend([_like(search)] * 4)
    count = "(SELECT COUNT(*) FROM samples s WHERE s.run_id = runs.id)"
    sql = (
        f"SELECT {RUN_COLUMNS}, {count} FROM runs WHERE {' AND '.join(where)} "
        "ORDER BY created DESC, rowid DESC"
    )
    conn = connect(path, create=False)
    conn.text_factory = text_or_bytes  # (text that is not UTF-8: that row is damaged)
    with contextlib.closing(conn), reading(path):
        if not status:
            rows = conn.execute(sql + " LIMIT ? OFFSET ?", (*params, limit, offset))
            return [listed_run(row[:-1], row[-1]) for row in rows.fetchall()]
        # a row's status (running or interrupted, damaged or stored) is known once read:
        # rows are read, one at a time, until the page is full
        runs = (listed_run(row[:-1], row[-1]) for row in conn.execute(sql, params))
        page = itertools.islice((r for r in runs if r.status == status), offset, offset + limit)
        return list(page)


def samples_page(
    log: RunLog,
    *,
    offset: int = 0,
    limit: int = 50,
    status: str | None = None,
    score: float | None = None,
    key: str | None = None,
) -> list[SampleInfo]:
    """A page of a run's samples, in the order they started.

    Args:
        log: The run.
        offset: Samples to skip.
        limit: At most this many (at most 1,000).
        status: Only samples with this status (``error``, ``success``, ``limit``...).
        score: Only samples one of whose scores has this value.
        key: Only the sample with this key.
    """
    where, params = ["run_id = ?"], list[object]([log.run_id])
    if key is not None:
        where.append("key = ?")
        params.append(key)
    if status:
        where.append("status = ?")
        params.append(status)
    if score is not None:
        where.append(
            "EXISTS (SELECT 1 FROM json_each(samples.scores) j "
            "WHERE json_extract(j.value, '$.value') = ?)"
        )
        params.append(float(score))
    rows = log._all(
        f"SELECT {SAMPLE_COLUMNS} FROM samples WHERE {' AND '.join(where)} "
        "ORDER BY created, rowid LIMIT ? OFFSET ?",
        (*params, _bound(limit), max(0, int(offset))),
    )
    with reading(log._where):
        return [SampleInfo._from_row(r) for r in rows]


def event_page(
    log: RunLog,
    sample: str = "",
    *,
    after: int | None = None,
    before: int | None = None,
    limit: int = 100,
    damaged: Damaged | None = None,
) -> list[EventRow]:
    """Up to ``limit`` events of a run's stream (``sample`` key, ``""`` for the run's
    own), in order: the first ones, or those after the position ``after``, or the last
    ones before ``before`` (or the very last ones with ``before=-1``). A row that cannot
    be read raises its ``RunStoreError``, or with ``damaged`` is what it makes."""
    limit = _bound(limit)
    params: tuple[Any, ...]
    if before is not None:
        sql = "SELECT seq, sample, data FROM events WHERE run_id = ? AND sample = ?"
        params = (log.run_id, sample)
        if before >= 0:
            sql += " AND seq < ?"
            params += (int(before),)
        rows = log._all(sql + " ORDER BY seq DESC LIMIT ?", (*params, limit))[::-1]
    else:
        rows = log._all(
            "SELECT seq, sample, data FROM events WHERE run_id = ? AND sample = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (log.run_id, sample, -1 if after is None else int(after), limit),
        )
    return [EventRow(seq, key, _event(log, data, damaged)) for seq, key, data in rows]


def _event(log: RunLog, data: str | bytes, damaged: Damaged | None) -> Event:
    try:
        return log._event(data)
    except RunStoreError as ex:
        if damaged is None:
            raise
        return damaged(ex)


def event_at(log: RunLog, id: str, damaged: Damaged | None = None) -> EventRow | None:
    """The event with this id, or ``None`` (a row that cannot be read: as in
    :func:`event_page`)."""
    row = log._one(
        "SELECT seq, sample, data FROM events WHERE run_id = ? AND id = ?", (log.run_id, id)
    )
    return None if row is None else EventRow(row[0], row[1], _event(log, row[2], damaged))


def event_bounds(log: RunLog, sample: str = "") -> tuple[int, int] | None:
    """The first and last positions of a stream's events, or ``None`` when it has none."""
    sql = "SELECT seq FROM events WHERE run_id = ? AND sample = ? ORDER BY seq {} LIMIT 1"
    first = log._one(sql.format("ASC"), (log.run_id, sample))
    last = log._one(sql.format("DESC"), (log.run_id, sample))  # (each one index probe)
    return None if first is None or last is None else (int(first[0]), int(last[0]))


def usage_totals(log: RunLog, sample: str | None = None) -> tuple[int, int]:
    """The model calls of a stream (``sample`` key, ``""`` for the run's own; ``None``:
    every stream of the run, an eval's samples too), nested ones included, and the
    tokens they used.

    This one reads every model event of the stream (a run of a million events takes a
    second or so): ask for it apart from the pages."""
    sql = (
        # (whole numbers only: a damaged row's 1e999 would be a sum of infinity)
        "SELECT COUNT(*), SUM(CASE json_type(data, '$.usage.total_tokens') WHEN 'integer' "
        "THEN json_extract(data, '$.usage.total_tokens') END) FROM events "
        "WHERE run_id = ? AND type = 'model'"
    )
    if sample is None:
        row = log._one(sql, (log.run_id,))
    else:
        row = log._one(sql + " AND sample = ?", (log.run_id, sample))
    return int(row[0] or 0), int(row[1] or 0)


def store_at(log: RunLog, sample: str = "", upto: int | None = None) -> dict[str, Any]:
    """The run's (or sample's) store as it was after position ``upto`` (``None``: as last
    recorded), rebuilt from its store events: reads the stream's store changes up to there."""
    from ..stores import StoreError, apply_store_patch
    from ..transcripts import StoreEvent

    if sample:
        row = log._one(
            "SELECT store_id FROM samples WHERE run_id = ? AND key = ?", (log.run_id, sample)
        )
    else:
        row = log._one("SELECT store_id FROM runs WHERE id = ?", (log.run_id,))
    store_id = row[0] if row is not None else None
    data: dict[str, Any] = {}
    for (text,) in log._stream(
        "SELECT data FROM events WHERE run_id = ? AND sample = ? AND type = 'store' "
        "AND seq <= ? ORDER BY seq",
        (log.run_id, sample, (1 << 62) if upto is None else int(upto)),
    ):
        ev = log._event(text)
        if isinstance(ev, StoreEvent) and ev.store == store_id:
            try:
                apply_store_patch(data, ev.changes)
            except StoreError as ex:  # (rows changed, or out of order: a damaged store)
                raise log._damaged(f"store event {ev.id!r}", text, ex) from ex
    return data


def last_messages(log: RunLog, sample: str = "") -> list[ChatMessage]:
    """The conversation of a stream that has not recorded its final messages (a run
    still going), as :meth:`RunLog.messages` makes it (its last top-level model call's
    input and output, then the tool results after it), read from the end: the model
    events from the last one back to the first at the top level, and the tool events
    after it, never the whole stream."""
    from ..transcripts import ModelEvent, SpanBegin, ToolEvent

    known: dict[str, bool] = {}  # a container's id -> are the events in it top-level?

    def top_level(span_id: str | None) -> bool:
        # (as RunLog.messages reads a stream: within spans only, not a tool call or subtask)
        chain: list[str] = []
        answer = True
        while span_id is not None:
            if span_id in known:
                answer = known[span_id]
                break
            chain.append(span_id)
            row = event_at(log, span_id)
            if row is None or not isinstance(row.event, SpanBegin) or len(chain) > 1000:
                answer = False
                break
            span_id = row.event.span_id
        for id in chain:
            known[id] = answer
        return answer

    last: tuple[int, ModelEvent] | None = None
    for seq, data in log._stream(
        "SELECT seq, data FROM events WHERE run_id = ? AND sample = ? AND type = 'model' "
        "ORDER BY seq DESC",
        (log.run_id, sample),
    ):
        ev = log._event(data)
        if isinstance(ev, ModelEvent) and ev.output is not None and top_level(ev.span_id):
            last = (seq, ev)
            break
    if last is None or last[1].output is None:
        return []
    tools = [
        ev.result
        for _, data in log._stream(
            "SELECT seq, data FROM events WHERE run_id = ? AND sample = ? AND type = 'tool' "
            "AND seq > ? ORDER BY seq",
            (log.run_id, sample, last[0]),
        )
        if isinstance(ev := log._event(data), ToolEvent)
        and ev.result is not None
        and top_level(ev.span_id)
    ]
    return [*log.model_input(last[1]), last[1].output.message, *tools]
