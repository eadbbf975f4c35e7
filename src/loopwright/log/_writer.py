"""The background writer: one thread per run store file streams runs' rows to SQLite.

Each run that records to a file gets a :class:`RunWriter`. The writers of one file share
one thread and one connection, so 2,000 concurrent runs cost one thread, not 2,000. The
event loop only puts items on the file's queue (never blocks); the thread takes whatever
has accumulated, serialises it, and writes it in one transaction. Each committed batch
is durable against the process being killed (WAL mode). The thread and its connection
(``_file_thread.py``) outlive the file's last writer a few seconds, for the process's
next run: closing a run costs one flush, not a connection's close (folding the WAL into
the file and syncing it, 4-20 ms). The thread has the log folded in beside its writing,
by a thread of its own, so no run waits for a fold either.

Every row is written with the secrets learnt redacted (``model/_redact.py``): no API
key, password or token reaches the file, whatever text carried it.

When writing fails (the disk is full, the file is damaged or taken away), the file's
thread stops writing and tells every writer of the file at once, from the thread: the
writer keeps the error for its next :meth:`RunWriter.flush` or :meth:`RunWriter.close`
and calls the callback given to :meth:`RunWriter.on_error` (``recording()`` uses it to
stop the run within milliseconds, instead of letting it work on unrecorded). What was
committed before the failure stays in the file, readable.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import error_text
from ..model import ChatMessage
from ..model._redact import learn_env_secrets
from ..transcripts import Event
from ._db import RunStoreError
from ._file_thread import acquire, release

__all__ = ["RunWriter", "store_failure"]

_log = logging.getLogger("loopwright.log")


class RunWriter:
    """Writes one run's rows, through the background thread of its file.

    Items are applied in the order they were put. Errors met writing this run's items
    (or any items of its file, after which the file is not written any more) are kept,
    passed to the :meth:`on_error` callback as soon as they happen, and raised by the
    next :meth:`flush` or :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._error: BaseException | None = None  # raised by the next flush/close
        self._on_error: Callable[[BaseException], None] | None = None
        self._closed = False
        self._file = acquire(self.path, self)
        self._queue = self._file.queue
        learn_env_secrets()

    @property
    def error(self) -> BaseException | None:
        """The first error met writing this run's items, if any."""
        return self._error

    def on_error(self, callback: Callable[[BaseException], None]) -> None:
        """Call ``callback(error)`` when writing fails (at once if it already has).

        It is called once, from the writer's thread (use ``loop.call_soon_threadsafe``
        to reach an event loop); what it raises is logged and ignored.
        """
        self._on_error = callback
        if self._error is not None:
            self._tell(callback, self._error)

    def _failed(self, error: BaseException) -> None:
        """Writing failed (called from the writer's thread)."""
        if self._error is not None:
            return
        self._error = error
        callback = self._on_error
        if callback is not None:
            self._tell(callback, error)

    @staticmethod
    def _tell(callback: Callable[[BaseException], None], error: BaseException) -> None:
        try:
            callback(error)
        except Exception:
            _log.exception("run store: the on_error callback failed")

    # --- the producer side (any thread; never blocks) ----------------------------
    def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        """Run ``sql`` with ``params`` in the writer's next batch."""
        self._put("sql", sql, params)

    # (event and message, called for every one, put their item themselves)
    def event(self, run_id: str, sample: str, seq: int, event: Event) -> None:
        """Write ``event`` (or update it, if one with its id was written before)."""
        if self._closed:
            self._refuse()
        self._queue.put((self, "event", run_id, sample, seq, event))

    def message(self, run_id: str, sample: str, seq: int, message: ChatMessage) -> None:
        """Write ``message`` unless one with its id is already stored for the run."""
        if self._closed:
            self._refuse()
        self._queue.put((self, "message", run_id, sample, seq, message))

    def batches_taken(self) -> int:
        """How many batches the file's thread has taken off its queue so far. While it
        is the same as when an item was put, that item is still queued: nothing of it
        was serialised yet (the thread counts a batch before serialising it)."""
        return self._file.taken

    def _put(self, *item: Any) -> None:
        if self._closed:
            self._refuse()
        self._queue.put((self, *item))

    def _refuse(self) -> None:
        raise RunStoreError(f"the run store writer for {str(self.path)!r} is closed")

    def _put_flush(self, wake: Callable[[], None]) -> None:
        self._queue.put((self, "flush", wake))
        self._file.urgent.set()

    async def flush(self) -> None:
        """Wait until everything put so far is committed (without blocking the loop).

        Raises:
            RunStoreError: Writing failed.
        """
        if self._closed:
            raise RunStoreError(f"the run store writer for {str(self.path)!r} is closed")
        if self._alive():
            await self._flushed()
        self._raise()

    async def opened(self) -> None:
        """Wait until the file is open for writing: at once when this process has it
        open already (a run after another), else until what was put so far is
        committed (the first run finds out now whether the file can be written).

        Raises:
            RunStoreError: Writing failed.
        """
        if self._file.connected.is_set() and self._file.error is None:
            self._raise()
        else:
            await self.flush()

    async def _flushed(self) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(resolve)

        self._put_flush(wake)
        await done

    def flush_sync(self, timeout: float | None = None) -> None:
        """Block until everything put so far is committed (for threads and scripts)."""
        if self._closed or not self._alive():
            self._raise()
            return
        done = threading.Event()
        self._put_flush(done.set)
        done.wait(timeout)
        self._raise()

    async def aclose(self) -> None:
        """Write what is queued, let go of the file (the last writer of a file waits
        for its thread to close it), and raise any error met."""
        if not self._closed:
            self._closed = True
            try:
                if self._alive():
                    await self._flushed()
            finally:  # (cancelled too: what is queued is still written, and the file let
                # go of, else it is never closed nor opened afresh when replaced)
                last = release(self._file, self)
            if last:
                await asyncio.to_thread(self._file.thread.join)
        self._raise()

    def close(self, timeout: float | None = None) -> None:
        """:meth:`aclose` for synchronous code (blocks)."""
        if not self._closed:
            self._closed = True
            if self._alive():
                done = threading.Event()
                self._put_flush(done.set)
                done.wait(timeout)
            if release(self._file, self) and self._file.thread.is_alive():
                self._file.thread.join(timeout)
        self._raise()

    def _alive(self) -> bool:
        """Whether the file's thread is there to write (not in a process forked since:
        then what this writer put is lost, and said so)."""
        if self._file.thread.is_alive():
            return True
        if self._error is None and not self._file.queue.empty():
            self._error = RunStoreError(
                "the run store's writer thread has ended (in a process forked since the run "
                "began, or one exiting): its last rows were not written"
            )
        return False

    def _raise(self) -> None:
        error = self._error
        if error is not None:
            raise store_failure(self.path, error) from error


def store_failure(path: Path, error: BaseException) -> RunStoreError:
    """The one-line error for a run store that could not be written."""
    if isinstance(error, RunStoreError):
        return RunStoreError(str(error))
    reason = error_text(error).splitlines()[0] if str(error) else type(error).__name__
    return RunStoreError(f"writing the run store {str(path)!r} failed: {reason}")
