"""The background writer: a thread that streams a run's rows to SQLite in batches.

The event loop only puts items on a queue (never blocks); the thread takes whatever has
accumulated, serialises it, and writes it in one transaction. Each committed batch is
durable against the process being killed (WAL mode).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import ChatMessage
from ..transcript import Event
from ._db import RunStoreError, connect
from ._serialize import dump_event, dump_message

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RunWriter"]

_log = logging.getLogger("loopwright.log")

MAX_BATCH = 2000
BATCH_WAIT = 0.02
"""Seconds the writer waits after a batch for the next one to gather (the most a reader
lags behind, plus the write)."""

_UPSERT_EVENT = """
INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (run_id, id) DO UPDATE SET data = excluded.data, span_id = excluded.span_id
"""
_INSERT_MESSAGE = """
INSERT OR IGNORE INTO messages (run_id, id, sample, seq, role, data) VALUES (?, ?, ?, ?, ?, ?)
"""

_open: weakref.WeakSet[RunWriter] = weakref.WeakSet()


class RunWriter:
    """Writes one run's rows from a background thread.

    Items are applied in the order they were put. Errors in the thread are kept and
    raised by the next :meth:`flush` or :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._error: BaseException | None = None  # raised by the next flush/close
        self._broken = False  # the file cannot be written: stop trying
        self._closed = False
        # set by flush and close: the thread then skips its wait for more items
        self._urgent = threading.Event()
        self._thread = threading.Thread(
            target=self._main, name=f"loopwright-run-store:{self.path.name}", daemon=True
        )
        self._thread.start()
        _open.add(self)

    # --- the producer side (any thread; never blocks) ----------------------------
    def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        """Run ``sql`` with ``params`` in the writer's next batch."""
        self._put(("sql", sql, params))

    def event(self, run_id: str, sample: str, seq: int, event: Event) -> None:
        """Write ``event`` (or update it, if one with its id was written before)."""
        self._put(("event", run_id, sample, seq, event))

    def message(self, run_id: str, sample: str, seq: int, message: ChatMessage) -> None:
        """Write ``message`` unless one with its id is already stored for the run."""
        self._put(("message", run_id, sample, seq, message))

    def _put(self, item: tuple[Any, ...]) -> None:
        if self._closed:
            raise RunStoreError(f"the run store writer for {str(self.path)!r} is closed")
        self._queue.put(item)

    async def flush(self) -> None:
        """Wait until everything put so far is committed (without blocking the loop).

        Raises:
            RunStoreError: Writing failed.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(resolve)

        self._put(("flush", wake))
        self._urgent.set()
        await done
        self._raise()

    def flush_sync(self, timeout: float | None = None) -> None:
        """Block until everything put so far is committed (for threads and scripts)."""
        if not self._thread.is_alive():
            self._raise()
            return
        done = threading.Event()
        self._put(("flush", done.set))
        self._urgent.set()
        done.wait(timeout)
        self._raise()

    async def aclose(self) -> None:
        """Write what is queued, stop the thread, and raise any error it met."""
        if not self._closed:
            self._queue.put(("stop",))
            self._urgent.set()
            self._closed = True
        await asyncio.to_thread(self._thread.join)
        self._raise()

    def close(self, timeout: float | None = None) -> None:
        """:meth:`aclose` for synchronous code (blocks)."""
        if not self._closed:
            self._queue.put(("stop",))
            self._urgent.set()
            self._closed = True
        self._thread.join(timeout)
        self._raise()

    def _raise(self) -> None:
        error = self._error
        if error is not None:
            raise RunStoreError(
                f"writing the run store {str(self.path)!r} failed: {error!r}"
            ) from error

    # --- the thread ---------------------------------------------------------------
    def _main(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = connect(self.path)
        except BaseException as ex:
            self._error, self._broken = ex, True
        stop = False
        while not stop:
            self._urgent.clear()  # before taking items: a later flush or close is seen
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            wakes: list[Callable[[], None]] = []
            if conn is not None and not self._broken:
                self._write(conn, batch)
            for item in batch:
                if item[0] == "flush":
                    wakes.append(item[1])
                elif item[0] == "stop":
                    stop = True
            for wake in wakes:
                try:
                    wake()
                except RuntimeError:  # the waiting loop is closed
                    pass
            if not stop and len(batch) < MAX_BATCH:
                # let the next batch gather: producers then put without waking us, and
                # the event loop's thread is not slowed by a switch for every event;
                # a flush or close waiting for us cuts the wait short
                self._urgent.wait(BATCH_WAIT)
        if conn is not None:
            conn.close()

    def _write(self, conn: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> None:
        import sqlite3

        # an event put twice in one batch (recorded pending, then completed) is written
        # once, at its first place: dumped now, it already holds its latest state
        written: set[int] = set()
        try:
            conn.execute("BEGIN")
            for item in batch:
                kind = item[0]
                if kind == "event":
                    _, run_id, sample, seq, event = item
                    if id(event) in written:
                        continue
                    written.add(id(event))
                    try:
                        data = dump_event(event)
                    except Exception as ex:  # a value pydantic cannot serialise
                        _log.error("run store: event %s not written: %r", event.id, ex)
                        self._error = self._error or ex
                        continue
                    conn.execute(
                        _UPSERT_EVENT,
                        (
                            run_id,
                            seq,
                            event.id,
                            sample,
                            event.span_id,
                            event.event,
                            event.timestamp.isoformat(),
                            data,
                        ),
                    )
                elif kind == "message":
                    _, run_id, sample, seq, message = item
                    conn.execute(
                        _INSERT_MESSAGE,
                        (run_id, message.id, sample, seq, message.role, dump_message(message)),
                    )
                elif kind == "sql":
                    conn.execute(item[1], item[2])
            conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as ex:
            _log.error("run store %s: a batch of %d writes failed: %r", self.path, len(batch), ex)
            self._error, self._broken = self._error or ex, True
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass


@atexit.register
def _close_all() -> None:
    """At interpreter exit, commit what open writers still hold."""
    for writer in list(_open):
        try:
            writer.close(timeout=10)
        except Exception:
            pass
