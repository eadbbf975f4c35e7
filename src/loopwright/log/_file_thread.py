"""One thread and one SQLite connection per run store file, shared by its runs' writers.

The thread takes whatever has accumulated on the file's queue, serialises it, redacts
the secrets learnt, and writes it in one transaction. It outlives the file's last
writer by :data:`IDLE_CLOSE` seconds (the process's next run reuses it); a file idle
that long, or every file at exit or on :func:`close_idle_files`, is closed (the WAL
folded in). While it is open, the WAL is folded in every ~1,000 pages by a short-lived
thread of its own (:meth:`_FileWriter._fold`), beside the writing, not inside a commit a
run waits for. A fork waits for the transactions and folds in flight (``_fork.py``).
See ``_writer.py`` for the producer side and how failures are told.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model._redact import redact_known_rows
from ..transcripts import ModelEvent
from ._db import connect
from ._fold import fold as _fold
from ._fold import folder as _folder
from ._fork import file_locked
from ._serialize import add_tool_set, dump_event, dump_message, sql_params

if TYPE_CHECKING:
    import sqlite3

    from ._writer import RunWriter

__all__ = ["BATCH_WAIT", "IDLE_CLOSE", "MAX_BATCH", "acquire", "close_idle_files", "release"]

_log = logging.getLogger("loopwright.log")

MAX_BATCH = 2000
IDLE_CLOSE = 5.0
"""Seconds a file's thread and connection outlive its last writer, waiting for the
process's next run (then the connection is closed and the WAL folded into the file)."""
BATCH_WAIT = 0.02
"""Seconds the writer lets a batch gather after its first item (the most a reader lags
behind, plus the write)."""
CHECKPOINT_PAGES = 1000
"""About this many pages written to the write-ahead log since it was last folded into
the file, the writer has it folded in, beside its writing (SQLite's own automatic
checkpoint, at the same size, runs inside a commit, which the runs waiting for it then
wait for as well)."""
# the estimate (measured on 50-step runs: 57 pages a commit for ~21 pages of rows): each
# row's text is in its table and its pages are written about twice; every commit also
# writes the b-trees' last leaves and their parents again
_PAGE = 4096
_PAGES_PER_COMMIT = 16

_UPSERT_EVENT = """
INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, id) DO UPDATE SET data = excluded.data, span_id = excluded.span_id
"""
_INSERT_MESSAGE = """
INSERT OR IGNORE INTO messages (run_id, id, sample, seq, role, data) VALUES (?, ?, ?, ?, ?, ?)
"""
# a run's events that refer to a message of the run not written (it lost a row)
_DROP_DANGLING = """
DELETE FROM events WHERE run_id = ?1 AND type IN ('model', 'tool') AND json_valid(data) AND
COALESCE(json_extract(data, '$.output.message."$ref"'), json_extract(data, '$.result."$ref"'))
IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.run_id = ?1 AND m.id = COALESCE(
json_extract(data, '$.output.message."$ref"'), json_extract(data, '$.result."$ref"')))
"""
_INSERT_TOOL_SET = "INSERT OR IGNORE INTO tool_sets (run_id, id, data) VALUES (?, ?, ?)"

# An item on a file's queue: (the RunWriter that put it, or None, kind, *payload).
_Item = tuple[Any, ...]
_ROWS = frozenset({"event", "message", "sql"})  # the kinds that write a row of the run


class _FileWriter:
    """The thread and connection that write one run store file for all its writers."""

    def __init__(self, path: Path, key: str, after: _FileWriter | None = None) -> None:
        # (absolute: the thread opens it later, a working directory changed meanwhile)
        self.path = path if key.startswith(":memory:") else path.absolute()  # (".." kept)
        self.key = key
        self.after = after  # the writer of the file replaced at the path: closed first
        self.queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        # set by flushes and closes: the thread then skips its wait for more items
        self.urgent = threading.Event()
        self.users = 0  # RunWriters not yet closed (guarded by _lock)
        self.writers: set[RunWriter] = set()  # them (guarded by _lock)
        self.error: BaseException | None = None  # the file cannot be written: stop trying
        self.inode = _inode(path)  # the file the connection writes (None: not there yet)
        self.connected = threading.Event()  # set once a batch was committed
        self.taken = 0  # batches taken off the queue so far (see Sink.on_event)
        self.wal_pages = 0  # an estimate of the pages in the log not yet folded in
        self.folding: threading.Thread | None = None  # folding them in (see _fold)
        self.folder: sqlite3.Connection | None = None  # the fold's connection (_folder)
        self.foldable = False  # whether it is on the writer's file (see _folder)
        self.folder_opened = False  # tried already (at the first fold: few runs need one)
        self.thread = threading.Thread(
            target=self._main, name=f"loopwright-run-store:{path.name}", daemon=True
        )
        self.thread.start()

    def _fail(self, error: BaseException) -> None:
        self.error = self.error or error
        with _lock:  # runs opened from now on get a fresh connection
            if _files.get(self.key) is self:
                del _files[self.key]
            writers = list(self.writers)
        for writer in writers:  # every run of the file stops being recorded: tell them now
            writer._failed(self.error)

    def _main(self) -> None:
        conn: sqlite3.Connection | None = None
        if self.after is not None:  # (its close may fold its log, by the same name: first)
            self.after.thread.join()
            self.after = None
        try:
            conn = connect(self.path)  # (a fork waits for it: see _fork.py)
            # the log is folded in by _fold, beside the writing; SQLite's own fold (in a
            # commit) only if the estimate fell far short
            conn.execute(f"PRAGMA wal_autocheckpoint = {10 * CHECKPOINT_PAGES}")
            self.inode = _inode(self.path)
        except BaseException as ex:
            self._fail(ex)
        stop = backlog = False
        while not stop:
            try:
                batch = [self.queue.get(timeout=IDLE_CLOSE)]
            except queue.Empty:  # nothing for a while: close the file if nobody uses it
                if _retire(self):
                    break
                continue
            if not backlog:  # let it gather: a short run is one batch (one commit, at its
                # flush), put with no switch of threads (the GIL) while it works
                self.urgent.wait(BATCH_WAIT)  # (cut short by a flush or close)
            self.urgent.clear()  # before taking items: a flush or close put later is seen
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            self.taken += 1  # before any item of the batch is serialised
            # the flushes to answer, found by _write as it goes (a second pass over the
            # batch cost ~0.8 µs an item, measured: its items are out of the CPU's caches)
            wakes: list[Callable[[], None]] = []
            if conn is not None and self.error is None:
                try:
                    stop = self._write(conn, batch, wakes)
                except BaseException as ex:  # a bug: keep serving flushes and closes
                    _log.exception("run store %s: writing a batch failed", self.path)
                    self._fail(ex)
                if self.error is None and not self.connected.is_set():
                    self.connected.set()
            if (error := self.error) is not None:  # (so if no connection) tell the batch's
                # writers; find its flushes anew
                wakes.clear()
                for item in batch:
                    writer: RunWriter | None = item[0]
                    if writer is not None:
                        writer._failed(error)
                    if item[1] == "flush":
                        wakes.append(item[2])
                    elif item[1] == "stop":
                        stop = True
            for wake in wakes:
                try:
                    wake()
                except RuntimeError:  # the waiting loop is closed
                    pass
            if self.wal_pages >= CHECKPOINT_PAGES and not stop and self.error is None:
                self._fold()
            backlog = len(batch) == MAX_BATCH  # more is queued: no wait for it
        if self.folding is not None:
            self.folding.join()
        with file_locked():  # (a fork waits for it: see _fork.py)
            if self.folder is not None:  # (first: the writer's connection is open, so
                self.folder.close()  # closing this one folds nothing)
            if conn is not None:  # closing the last connection folds what is left
                if self.inode is not None and _inode(self.path) != self.inode:
                    _fold(conn, self.path, "TRUNCATE", wait=False)  # moved: SQLite's would not
                conn.close()

    def _write(
        self, conn: sqlite3.Connection, batch: list[_Item], wakes: list[Callable[[], None]]
    ) -> bool:
        """Write ``batch`` in one transaction, its flushes added to ``wakes``: True at a stop."""
        import sqlite3

        # serialise first, then write each table's rows with one executemany: rows of
        # different tables do not depend on each other's order (no foreign keys or
        # triggers), and the batch commits as one transaction
        stop, size = False, 0  # (size: of the rows' text, see wal_pages)
        sql: list[tuple[str, tuple[Any, ...]]] = []
        events: list[tuple[Any, ...]] = []
        messages: list[tuple[Any, ...]] = []
        tool_sets: dict[tuple[str, str], str] = {}  # (run, id): text, of this batch
        offered: dict[int, tuple[str, str]] = {}  # a tools list of the batch: set id, text
        # an event put twice in one batch (recorded pending, then completed) is written
        # once, at its first place: dumped now, it already holds its latest state
        written: set[int] = set()
        lost: set[str] = set()  # the runs of the batch that lost a row
        for item in batch:
            kind = item[1]
            if kind in _ROWS and item[0]._error is not None:  # a row of the run was lost:
                continue  # its rows stop there (a later one may refer to it), its end too
            if kind == "event":
                writer, _, run_id, sample, seq, event = item
                if id(event) in written:
                    continue
                written.add(id(event))
                # (an event is a plain dataclass, not validated when made: one that its
                # maker filled with a wrong value is refused alone, not with its batch)
                try:
                    tools = None
                    if isinstance(event, ModelEvent) and event.tools:
                        tools = add_tool_set(run_id, event.tools, tool_sets, offered)
                    data = dump_event(event, tools)
                    stamp = event.timestamp.isoformat()
                except Exception as ex:  # a value pydantic cannot serialise
                    _log.error("run store: event %s not written: %r", event.id, ex)
                    writer._failed(ex)
                    lost.add(run_id)
                    continue
                size += len(data)
                events.append(
                    (run_id, seq, event.id, sample, event.span_id, event.event, stamp, data)
                )
            elif kind == "message":
                writer, _, run_id, sample, seq, message = item
                try:
                    text = dump_message(message)
                except (ValueError, TypeError, UnicodeError) as ex:  # cannot serialise
                    _log.error("run store: message %s not written: %r", message.id, ex)
                    writer._failed(ex)
                    lost.add(run_id)
                    continue
                size += len(text)
                messages.append((run_id, message.id, sample, seq, message.role, text))
            elif kind == "flush":
                wakes.append(item[2])
            elif kind == "stop":
                stop = True
            elif kind == "sql":
                sql.append((item[2], sql_params(item[3])))
        if not (sql or events or messages or lost):
            return stop
        # the secrets learnt redacted, in every row of the batch at once: one pass of the
        # gate over them all, and each row only when one may hold a secret
        texts = redact_known_rows([r[-1] for r in events] + [r[-1] for r in messages])
        if texts is not None:
            n = len(events)
            events = [(*r[:-1], t) for r, t in zip(events, texts[:n], strict=True)]
            messages = [(*r[:-1], t) for r, t in zip(messages, texts[n:], strict=True)]
        failed: Exception | None = None
        with file_locked():  # (a fork waits for it: see _fork.py)
            try:
                conn.execute("BEGIN")
                for statement, params in sql:
                    conn.execute(statement, params)
                if tool_sets:  # (before the events that refer to them)
                    rows = [(*k, text) for k, text in tool_sets.items()]
                    conn.executemany(_INSERT_TOOL_SET, rows)
                if events:
                    conn.executemany(_UPSERT_EVENT, events)
                if messages:
                    conn.executemany(_INSERT_MESSAGE, messages)
                for run_id in lost:  # (its events of this batch or before that refer to a
                    # message it lost: an event put pending, completed since, see Sink)
                    conn.execute(_DROP_DANGLING, (run_id,))
                conn.execute("COMMIT")
            except Exception as ex:  # SQLite or the disk failed (or a bug): nothing
                failed = ex  # half-written
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
        if failed is not None:  # (said once, by the error every writer of the file
            # raises: debug level here; told outside the section a fork waits for)
            _log.debug("run store %s: a batch of %d failed: %r", self.path, len(batch), failed)
            self._fail(failed)
            return stop
        size += sum(map(len, tool_sets.values()))
        self.wal_pages += _PAGES_PER_COMMIT + 2 * size // _PAGE
        return stop

    def _fold(self) -> None:
        """Fold the log into the file (and sync it) beside the writing, on a thread of
        its own, through :func:`_folder`'s connection: no run waits for it (4-30 ms in
        a commit), SQLite does it without the GIL, and it blocks no reader or writer
        (``PASSIVE``: what a reader was in the way of is folded next time). One at a time."""
        if self.folding is not None and self.folding.is_alive():
            return
        self.wal_pages = 0
        if not self.folder_opened and not self.key.startswith(":memory:"):  # (no log)
            if _inode(self.path) != self.inode:  # not ours: opening it would read our log
                return  # as its own (and reset it, were its page size another)
            self.folder_opened = True
            self.folder = _folder(self.path)
            self.foldable = self.folder is not None and _inode(self.path) == self.inode
        if self.folder is None or not self.foldable:  # see _folder
            return
        folding = threading.Thread(
            target=self._folding,
            args=(self.folder,),
            name=f"loopwright-run-store-fold:{self.path.name}",
            daemon=True,
        )
        folding.start()
        self.folding = folding  # (started: it may be joined from now on)

    def _folding(self, folder: sqlite3.Connection) -> None:
        with file_locked():  # (beside the writing's: sections do not exclude each other)
            _fold(folder, self.path)


# --- one writer thread per file ------------------------------------------------------------
_lock = threading.Lock()
_files: dict[str, _FileWriter] = {}


def _key(path: Path) -> str:
    if str(path) == ":memory:":
        return f":memory:{object()!r}"  # every in-memory store is its own
    return os.path.realpath(path)


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # not there (yet), or ":memory:"
        return None
    return st.st_dev, st.st_ino


def acquire(path: Path, writer: RunWriter) -> _FileWriter:
    key = _key(path)
    with _lock:
        file, replaced = _files.get(key), None
        if file is not None and file.users == 0 and file.inode != _inode(path):
            # idle, and the file was replaced or removed meanwhile: open the new one
            del _files[key]
            file.queue.put((None, "stop"))
            file.urgent.set()
            file, replaced = None, file
        if file is None or file.error is not None:
            file = _files[key] = _FileWriter(path, key, after=replaced)
        file.users += 1
        file.writers.add(writer)
    if file.error is not None:  # it failed before the writer was added: tell it
        writer._failed(file.error)
    return file


def release(file: _FileWriter, writer: RunWriter) -> bool:
    """One writer of ``file`` is done. The file stays open for the next run (see
    :data:`IDLE_CLOSE`) unless it failed: then its last writer stops its thread and
    True is returned (wait for the thread to end)."""
    with _lock:
        file.users -= 1
        file.writers.discard(writer)
        if file.users > 0 or _files.get(file.key) is file:
            return False
    _stop([file], timeout=0)
    return True


def _retire(file: _FileWriter) -> bool:
    """Called by ``file``'s thread when it has been idle: True if nobody uses the file
    (it is then forgotten, and the thread closes it), False if a run still does."""
    with _lock:
        if file.users > 0:
            return False
        if _files.get(file.key) is file:
            del _files[file.key]
        return True


def close_idle_files(timeout: float | None = 10) -> None:
    """Close every run store file no run is writing now (its WAL is folded into it),
    instead of waiting :data:`IDLE_CLOSE` seconds."""
    with _lock:
        idle = [f for f in _files.values() if f.users == 0]
        for file in idle:
            del _files[file.key]
    _stop(idle, timeout)


def _stop(files: list[_FileWriter], timeout: float | None) -> None:
    for file in files:
        file.queue.put((None, "stop"))
        file.urgent.set()
    for file in files:
        if file.thread is not threading.current_thread():
            file.thread.join(timeout)


def _reset_after_fork() -> None:
    global _lock, _files
    _lock, _files = threading.Lock(), {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


@atexit.register
def _close_all() -> None:
    """At interpreter exit, commit what open writers still hold."""
    with _lock:
        files = list(_files.values())
        _files.clear()
    _stop(files, timeout=10)
