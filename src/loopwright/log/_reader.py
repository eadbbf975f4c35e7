"""Reading the run store: list runs, load one, iterate its events, rebuild its state.

Reading works while a run is still being written (SQLite WAL: readers see every
committed batch).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import ChatMessage, ModelOutput
from ..transcripts import Event, ModelEvent, SpanBegin, SubtaskEvent, ToolEvent
from ..transcripts._transcript import _resolve_input
from ._db import RunStoreError, connect, reading, resolve_db
from ._info import (
    DAMAGED,
    RUN_COLUMNS,
    SAMPLE_COLUMNS,
    RunInfo,
    SampleInfo,
    listed_run,
    message_ids,
    text_or_bytes,
)
from ._serialize import MessageLookup, load_event, load_message

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RunInfo", "RunLog", "SampleInfo", "list_runs", "load_run"]


def list_runs(
    db: str | os.PathLike[str] | None = None,
    *,
    limit: int | None = None,
    name: str | None = None,
    status: str | None = None,
    agent: str | None = None,
    version: str | None = None,
) -> list[RunInfo]:
    """The runs in the run store, newest first.

    A row that cannot be read is listed as a placeholder whose ``status`` is ``damaged``
    and whose ``error`` says why (``_info.listed_run``): it does not hide the others.

    Args:
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
        limit: At most this many (damaged rows count, in their place).
        name: Only runs with this name.
        status: Only runs with this status (``interrupted`` runs are stored as
            ``running``; ``damaged``: the rows that cannot be read, whatever their stored
            status; another status never lists a damaged row).
        agent: Only runs of the agent with this name (``metadata["agent"]``, recorded by
            ``run()``; else the run's name).
        version: Only runs whose recorded agent version (``metadata["versions"]``,
            ``agents/_version.py``) starts with this.
    """
    path = resolve_db(db)
    conn = connect(path, create=False)
    conn.text_factory = text_or_bytes  # (text that is not UTF-8: that row is damaged)
    with contextlib.closing(conn), reading(path):
        where: list[str] = []
        params: list[Any] = []
        if name is not None:
            where.append("name = ?")
            params.append(name)
        # (metadata that is not JSON: no agent nor version, rather than an error)
        meta = "CASE WHEN json_valid(metadata) THEN json_extract(metadata, ?) END"
        if agent is not None:
            # the agent's name run() records, else the run's name (which defaults to it)
            where.append(f"coalesce({meta}, name) = ?")
            params.extend(["$.agent", agent])
        if version is not None:  # a prefix, as run ids are given
            where.append(f"substr({meta}, 1, ?) = ?")
            params.extend(["$.versions.agent", len(version), version])
        if status is not None and status != DAMAGED:
            where.append("status = ?")
            params.append("running" if status == "interrupted" else status)
        count = "(SELECT COUNT(*) FROM samples s WHERE s.run_id = runs.id)"
        sql = f"SELECT {RUN_COLUMNS}, {count} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, rowid DESC"
        # a row's status (running or interrupted, damaged or stored) is known once read
        if limit is not None and status is None:
            sql += f" LIMIT {max(0, int(limit))}"
        rows = (listed_run(row[:-1], row[-1]) for row in conn.execute(sql, params))
        runs = (r for r in rows if status is None or r.status == status)
        return list(itertools.islice(runs, None if limit is None else max(0, int(limit))))


def load_run(
    run: str | os.PathLike[str] | None = None, db: str | os.PathLike[str] | None = None
) -> RunLog:
    """Open a recorded run for reading.

    Args:
        run: A run id (or a unique prefix of one), the path of a JSON export
            (:func:`export_run`), or ``None`` for the latest run.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).

    Raises:
        RunStoreError: No such run (or store).
    """
    if run is not None and (
        isinstance(run, os.PathLike) or str(run).endswith(".json") or os.sep in str(run)
    ):
        from ._export import import_run

        conn = connect(":memory:")
        run_id = import_run(run, db=conn)
        return RunLog(conn, run_id, where=run)
    path = resolve_db(db)
    conn = connect(path, create=False)
    try:
        with reading(path):
            run_id = _find_run(conn, None if run is None else str(run), path)
    except BaseException:
        conn.close()
        raise
    return RunLog(conn, run_id, where=path)


def _find_run(conn: sqlite3.Connection, run: str | None, where: Path) -> str:
    if run is None:
        row = conn.execute(
            "SELECT id FROM runs ORDER BY created DESC, rowid DESC LIMIT 1"
        ).fetchone()
        if row is None:
            raise RunStoreError(f"the run store {str(where)!r} has no runs yet")
        return str(row[0])
    rows = conn.execute(
        "SELECT id FROM runs WHERE id = ? OR substr(id, 1, ?) = ? LIMIT 3", (run, len(run), run)
    ).fetchall()
    ids = sorted({r[0] for r in rows})
    if run in ids:
        return run
    if len(ids) == 1:
        return str(ids[0])
    if not ids:
        raise RunStoreError(
            f"no run {run!r} in {str(where)!r}; list the runs with lw.list_runs() "
            "(or `loopwright runs list`)"
        )
    raise RunStoreError(f"{run!r} matches several runs ({', '.join(ids)}); give more of the id")


class RunLog:
    """A recorded run, read from the run store. Close it (or use ``with``) when done.

    Methods taking ``sample`` read that sample's stream (a sample key or id, or a
    :class:`SampleInfo`); with ``sample=None`` they read the run's own events (outside
    samples).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        *,
        where: str | os.PathLike[str] = "the run store",
    ) -> None:
        self._conn = conn
        self._where = where  # for errors: the file read
        self.run_id = run_id
        self._messages: dict[str, ChatMessage] = {}
        self._tool_sets: dict[str, str] = {}  # a model event's tools, by reference (text)
        self._model_events: OrderedDict[str, ModelEvent] = OrderedDict()
        self._inputs: OrderedDict[str, list[str]] = OrderedDict()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection to the store."""
        self._conn.close()

    @property
    def _run(self) -> str:
        return f"run {self.run_id!r} in {str(self._where)!r}"

    # every read goes through these: SQLite's errors become a RunStoreError naming the file
    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        with reading(self._where):
            return self._conn.execute(sql, params).fetchone()

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with reading(self._where):
            return self._conn.execute(sql, params).fetchall()

    def _stream(self, sql: str, params: tuple[Any, ...]) -> Iterator[Any]:
        with reading(self._where):
            cursor = self._conn.execute(sql, params)
        try:
            while True:
                with reading(self._where):
                    rows = cursor.fetchmany(256)
                if not rows:
                    return
                yield from rows
        finally:
            cursor.close()

    @property
    def info(self) -> RunInfo:
        """The run's row (read afresh: a run still going changes)."""
        row = self._one(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (self.run_id,))
        if row is None:
            raise RunStoreError(f"{self._run} is gone from the store")
        count = self._one("SELECT COUNT(*) FROM samples WHERE run_id = ?", (self.run_id,))[0]
        with reading(self._where):
            return RunInfo._from_row(row, count)

    @property
    def samples(self) -> list[SampleInfo]:
        """The run's samples, in the order they started."""
        rows = self._all(
            f"SELECT {SAMPLE_COLUMNS} FROM samples WHERE run_id = ? ORDER BY created, rowid",
            (self.run_id,),
        )
        with reading(self._where):
            return [SampleInfo._from_row(r) for r in rows]

    def samples_finished_since(self, since: float) -> list[SampleInfo]:
        """The run's samples that finished at or after ``since`` (seconds since the
        epoch), in the order they finished: what a reader following a run (the Ray
        driver) has not seen yet, without reading every sample again."""
        rows = self._all(
            f"SELECT {SAMPLE_COLUMNS} FROM samples WHERE run_id = ? AND finished >= ? "
            "ORDER BY finished, rowid",
            (self.run_id, since),
        )
        with reading(self._where):
            return [SampleInfo._from_row(r) for r in rows]

    def _sample(self, sample: str | SampleInfo | None) -> str:
        if sample is None or sample == "":
            return ""
        if isinstance(sample, SampleInfo):
            return sample.key
        rows = self._all(
            "SELECT key FROM samples WHERE run_id = ? AND (key = ? OR id = ?) "
            "ORDER BY key = ? DESC, epoch LIMIT 2",
            (self.run_id, sample, sample, sample),
        )
        if not rows:
            raise RunStoreError(f"{self._run} has no sample {sample!r}")
        return str(rows[0][0])

    # --- messages -------------------------------------------------------------------
    def message(self, id: str) -> ChatMessage:
        """The message with this id.

        Raises:
            RunStoreError: The run has no such message.
        """
        msg = self._messages.get(id)
        return msg if msg is not None else self._messages.setdefault(id, self._read_message(id))

    def _read_message(self, id: str) -> ChatMessage:
        """The message with this id, read from the store (not kept)."""
        data = self._data("messages", id, f"{self._run} has no message {id!r}")
        try:
            return load_message(data)
        except (ValueError, RecursionError) as ex:  # (ValidationError; too deep)
            raise self._damaged(f"message {id!r}", data, ex) from ex

    def _data(self, table: str, id: str, missing: str) -> Any:
        """The ``data`` of this run's row ``id`` in ``table`` (messages, tool sets)."""
        row = self._one(f"SELECT data FROM {table} WHERE run_id = ? AND id = ?", (self.run_id, id))
        if row is None:
            raise RunStoreError(missing)
        return row[0]

    def _tool_set(self, id: str) -> list[Any]:
        """The tools a model event's row refers to (``{"$ref": id}``, schema version 2):
        a fresh list of their JSON data."""
        text = self._tool_sets.get(id)
        if text is None:
            missing = f"{self._run} has no tool set {id!r} (the store is damaged)"
            text = self._tool_sets[id] = self._data("tool_sets", id, missing)
        try:
            tools = json.loads(text)
        except (ValueError, RecursionError) as ex:  # (JSON nested too deep)
            raise self._damaged(f"tool set {id!r}", text, ex) from ex
        if not isinstance(tools, list):
            raise self._damaged(f"tool set {id!r}", text, ValueError("not a list"))
        return tools

    def _event(self, data: str | bytes, message: MessageLookup | None = None) -> Event:
        """An event row (its messages by ``message``), or a clear error if it is damaged."""
        try:
            return load_event(data, message or self.message, self._tool_set)
        except (ValueError, RecursionError) as ex:  # (JSON nested too deep)
            raise self._damaged("an event", data, ex) from ex

    def _damaged(self, what: str, data: str | bytes, ex: Exception) -> RunStoreError:
        reason = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
        return RunStoreError(
            f"{self._run}: {what} cannot be read ({reason}); the file may be damaged. The "
            f"row begins {str(data)[:80]!r}"
        )

    def messages(self, sample: str | SampleInfo | None = None) -> list[ChatMessage]:
        """The final conversation: the messages the run (or sample) finished with, or,
        for a run that did not say (still going, or killed), the last top-level model
        call's input and output followed by the tool results after it."""
        key = self._sample(sample)
        if key:
            row = self._one(
                "SELECT messages FROM samples WHERE run_id = ? AND key = ?", (self.run_id, key)
            )
        else:
            row = self._one("SELECT messages FROM runs WHERE id = ?", (self.run_id,))
        if row is not None and row[0] is not None:
            return [self.message(i) for i in message_ids(row[0], self._where)]
        last: ModelEvent | None = None
        tools: list[ChatMessage] = []
        for ev in self._top_level(key):
            if isinstance(ev, ModelEvent) and ev.output is not None:
                last, tools = ev, []
            elif isinstance(ev, ToolEvent) and ev.result is not None and last is not None:
                tools.append(ev.result)
        if last is None or last.output is None:
            return []
        return [*self.model_input(last), last.output.message, *tools]

    def _top_level(self, key: str) -> Iterator[Event]:
        spans: set[str | None] = {None}
        for ev in self._events(key):
            if ev.span_id in spans:
                if isinstance(ev, SpanBegin):
                    spans.add(ev.id)
                yield ev

    # --- events ---------------------------------------------------------------------
    def events(self, sample: str | SampleInfo | None = None) -> Iterator[Event]:
        """Every event of the run (or sample), lazily, in the order they began —
        including those within tool calls and subtasks (``span_id`` says where). Events
        still pending when read show ``pending=True``."""
        return self._events(self._sample(sample))

    def _events(self, key: str, keep: bool = True) -> Iterator[Event]:
        # keep=False (diff_runs): an event's messages are read for it, none kept (nor it)
        message = self.message if keep else self._read_message
        for (data,) in self._stream(
            "SELECT data FROM events WHERE run_id = ? AND sample = ? ORDER BY seq",
            (self.run_id, key),
        ):
            ev = self._event(data, message)
            if keep and isinstance(ev, ModelEvent):
                self._remember(ev)
            yield ev

    def tool_events(self, sample: str | SampleInfo | None = None) -> dict[str, ToolEvent]:
        """Every tool call of the run (or sample), nested ones included, by the tool
        call's id: how each call in the conversation really went. A call that raised has
        ``failure`` (``Type: message``) and ``traceback`` (its message in the conversation
        is then only a placeholder); a call that reported an error to the model has
        ``error``; one still running has ``pending``."""
        events: dict[str, ToolEvent] = {}
        for (data,) in self._stream(
            "SELECT data FROM events WHERE run_id = ? AND sample = ? AND type = 'tool' "
            "ORDER BY seq",
            (self.run_id, self._sample(sample)),
        ):
            ev = self._event(data)
            if isinstance(ev, ToolEvent):
                events[ev.call.id] = ev
        return events

    def tree(self, sample: str | SampleInfo | None = None) -> list[Event]:
        """The top-level events, with each tool call's and subtask's events nested in
        its ``events`` (as in a live :class:`~loopwright.Transcript`)."""
        root: list[Event] = []
        lists: dict[str, list[Event]] = {}
        for ev in self.events(sample):
            target = lists.get(ev.span_id, root) if ev.span_id is not None else root
            target.append(ev)
            if isinstance(ev, (ToolEvent, SubtaskEvent)):
                ev.events = []
                lists[ev.id] = ev.events
            elif isinstance(ev, SpanBegin):
                lists[ev.id] = target
        return root

    def _remember(self, ev: ModelEvent) -> None:
        self._model_events[ev.id] = ev
        if len(self._model_events) > 512:
            self._model_events.popitem(last=False)

    def _model_event(self, id: str) -> ModelEvent:
        ev = self._model_events.get(id)
        if ev is None:
            row = self._one(
                "SELECT data FROM events WHERE run_id = ? AND id = ?", (self.run_id, id)
            )
            if row is None:
                raise RunStoreError(f"{self._run} has no event {id!r}")
            loaded = self._event(row[0])
            if not isinstance(loaded, ModelEvent):
                raise RunStoreError(
                    f"{self._run}: event {id!r} is a {loaded.event} event, not a model event"
                )
            ev = loaded
            self._remember(ev)
        return ev

    def model_input_ids(self, event: ModelEvent) -> list[str]:
        """The ids of every input message of a model event."""
        try:
            ids = _resolve_input(event, self._model_event, self._inputs.get)
        except LookupError as ex:  # (a chain that loops: the run store is damaged)
            raise RunStoreError(f"{self._run}: {ex} (the run store is damaged)") from None
        self._inputs[event.id] = ids
        if len(self._inputs) > 32:
            self._inputs.popitem(last=False)
        return list(ids)

    def model_input(self, event: ModelEvent) -> list[ChatMessage]:
        """Every input message of a model event (its ``input`` lists only the new ones)."""
        return [self.message(i) for i in self.model_input_ids(event)]

    def model_outputs(self, sample: str | SampleInfo | None = None) -> list[ModelOutput]:
        """The outputs of the run's successful model calls, in the order they began
        (what the ``replay`` provider replays)."""
        return [
            ev.output
            for ev in self.events(sample)
            if isinstance(ev, ModelEvent) and ev.output is not None and ev.error is None
        ]

    # --- the store ------------------------------------------------------------------
    def store(self, sample: str | SampleInfo | None = None) -> dict[str, Any]:
        """The run's (or sample's) store as it was last recorded, rebuilt from its
        ``StoreEvent``\\ s."""
        from ._pages import store_at

        return store_at(self, self._sample(sample))
