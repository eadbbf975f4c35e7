"""``RunRecorder``: the run store's subscriber — one run's rows, written as they are heard.

The run scope (``runtime/``) opens a run and decides how it ended; a ``RunRecorder``
only writes: the run's row when it opens, every event and message of the transcripts it
follows (the run's, and each sample's, under the sample's key), the samples' rows, and
the run's end. Everything goes through the file's writer thread (``_writer.py``): the
event loop never waits for the disk, except in :meth:`RunRecorder.open` (to fail at once
if the file cannot be written) and at the end (to know it all reached the file).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..model._redact import error_summary
from ..transcripts import Transcript
from ._db import RunStoreError, hostname
from ._outcome import COST_KEY, RunEnd, Sink, json_text, mark_failed
from ._writer import RunWriter, store_failure

__all__ = ["RunRecorder"]

_END_RUN = (
    "UPDATE runs SET status = ?, finished = ?, output = ?, messages = ?, error = ?, "
    f"\"limit\" = ?, metadata = json_set(COALESCE(metadata, '{{}}'), '$.{COST_KEY}', json(?)) "
    "WHERE id = ?"
)
_END_SAMPLE = (
    "UPDATE samples SET status = ?, finished = ?, output = ?, messages = ?, scores = ?, "
    'error = ?, "limit" = ? WHERE run_id = ? AND key = ?'
)


def _claim(path: Path, run_id: str, holder: tuple[str, str | None, int | None]) -> None:
    """Take run ``run_id`` for this process if its row still has ``holder``'s status,
    host and pid."""
    import sqlite3

    from ._db import connect
    from ._fork import file_locked

    with file_locked():  # (a fork waits for it: see _fork.py)
        conn = connect(path)
        try:
            changed = conn.execute(
                "UPDATE runs SET status = 'running', host = ?, pid = ? "
                "WHERE id = ? AND status = ? AND host IS ? AND pid IS ?",
                (hostname(), os.getpid(), run_id, *holder),
            ).rowcount
        except sqlite3.Error as ex:
            raise RunStoreError(f"cannot resume run {run_id!r} in {str(path)!r}: {ex}") from ex
        finally:
            conn.close()
    if changed != 1:
        raise RunStoreError(
            f"run {run_id!r} in {str(path)!r} was taken by another resume meanwhile (it is "
            "being resumed there)"
        )


def _finite(value: float | None) -> float | None:
    """A number SQLite's ``json()`` reads (it refuses ``NaN`` and ``Infinity``)."""
    return value if value is not None and math.isfinite(value) else None


class RunRecorder:
    """The rows of one run in the run store at ``path``.

    Attributes:
        path: The run store file.
        run_id: The run's id.
        writer: The run's writer (``None`` once closed).
    """

    def __init__(
        self, path: Path, run_id: str, first_seq: int = 0, first_message_seq: int = 0
    ) -> None:
        # (absolute: its end may be written by mark_failed after a change of folder)
        self.path = path if str(path) == ":memory:" else Path(path).absolute()
        self.run_id = run_id
        self.writer: RunWriter | None = RunWriter(path)
        # one order for the events of the run and its samples (a resumed run's go on
        # after those recorded, and so do its messages)
        self._seq = itertools.count(first_seq)
        self._first_message_seq = first_message_seq

    async def open(
        self,
        *,
        name: str | None,
        model: str | None,
        input: Any,
        metadata: Mapping[str, Any],
        store_id: str,
    ) -> None:
        """Write the run's row and wait for it: fail now if the file cannot be written.

        Raises:
            RunStoreError: The run store cannot be written (the writer is closed).
        """
        assert self.writer is not None
        self.writer.execute(
            "INSERT INTO runs (id, name, model, status, created, input, metadata, "
            "store_id, host, pid) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
            (
                self.run_id,
                name,
                model,
                time.time(),
                json_text(input),
                json_text(dict(metadata)),
                store_id,
                hostname(),
                os.getpid(),
            ),
        )
        try:
            await self.writer.opened()
        except BaseException:
            await self._close(raise_errors=False)
            raise

    async def reopen(self, *, resumes: int, holder: tuple[str, str | None, int | None]) -> None:
        """Mark a run that stopped unfinished as ``running`` again, in this process, and
        count the resume (``metadata["resumes"]``); wait for it like :meth:`open`.

        Raises:
            RunStoreError: Its row no longer has ``holder`` (its status, host and pid
                when it was read): another resume took it meanwhile.
        """
        assert self.writer is not None
        try:
            await asyncio.to_thread(_claim, self.path, self.run_id, holder)
        except BaseException:
            await self._close(raise_errors=False)
            raise
        self.writer.execute(
            "UPDATE runs SET status = 'running', finished = NULL, output = NULL, "
            'messages = NULL, error = NULL, "limit" = NULL, host = ?, pid = ?, '
            "metadata = json_set(COALESCE(metadata, '{}'), '$.resumes', ?) WHERE id = ?",
            (hostname(), os.getpid(), resumes, self.run_id),
        )
        try:
            await self.writer.opened()
        except BaseException:
            await self._close(raise_errors=False)
            raise

    def follow(self, transcript: Transcript, sample: str = "") -> Callable[[], None]:
        """Write every event and message of ``transcript`` (a sample's under its key);
        returns the function that stops following it."""
        if self.writer is None:
            return lambda: None
        sink = Sink(self.writer, self.run_id, sample, self._seq)
        if not sample and self._first_message_seq:
            sink.mseq = itertools.count(self._first_message_seq)
        return transcript.subscribe(sink.on_event, on_message=sink.on_message)

    def on_failure(self, callback: Callable[[BaseException], None]) -> None:
        """Call ``callback`` (from the writer's thread) when writing fails."""
        if self.writer is not None:
            self.writer.on_error(callback)

    @property
    def error(self) -> BaseException | None:
        """Why writing failed, if it did."""
        return self.writer.error if self.writer is not None else None

    def failure(self, error: BaseException) -> RunStoreError:
        """The one-line :class:`RunStoreError` for a failure of this run's file."""
        return store_failure(self.path, error)

    async def flush(self) -> None:
        """Wait until everything written so far is in the file."""
        if self.writer is not None:
            await self.writer.flush()

    def open_sample(
        self,
        key: str,
        *,
        id: str,
        epoch: int,
        input: Any,
        target: Any,
        metadata: Mapping[str, Any],
        store_id: str,
    ) -> None:
        """Write a sample's row (``running``)."""
        if self.writer is not None:
            self.writer.execute(
                "INSERT INTO samples (run_id, key, id, epoch, status, created, input, target, "
                "metadata, store_id) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    self.run_id,
                    key,
                    id,
                    epoch,
                    time.time(),
                    json_text(input),
                    json_text(target),
                    json_text(dict(metadata)),
                    store_id,
                ),
            )

    def end_sample(self, key: str, end: RunEnd, scores: Mapping[str, Any] | None) -> None:
        """Write how a sample ended."""
        if self.writer is not None:
            self.writer.execute(
                _END_SAMPLE,
                (
                    end.status,
                    time.time(),
                    end.output,
                    end.messages,
                    json_text(scores),
                    end.error,
                    end.limit,
                    self.run_id,
                    key,
                ),
            )

    async def end(self, end: RunEnd, *, failed: bool, raise_errors: bool) -> None:
        """Write how the run ended and close the writer (waiting for it).

        ``failed``: the file failed already; the end is then tried once, briefly, on a
        connection of its own (it may work), and nothing is raised.
        """
        params = (
            end.status,
            time.time(),
            end.output,
            end.messages,
            end.error,
            end.limit,
            json.dumps({"dollars": _finite(end.cost), "unpriced_calls": end.unpriced_calls}),
            self.run_id,
        )
        if failed:
            writer, self.writer = self.writer, None
            if writer is not None:  # let go of the file (its error is already known)
                with contextlib.suppress(RunStoreError):
                    await writer.aclose()
            await asyncio.to_thread(mark_failed, self.path, _END_RUN, params)
            return
        writer = self.writer
        if writer is not None:
            writer.execute(_END_RUN, params)
        try:
            await self._close(raise_errors=raise_errors)
        finally:
            if writer is not None and writer.error is not None:
                # a row was lost before the end was written (the run had not heard yet):
                # its rows, the end's too, stopped there; the end written as for a failed
                # store, as the error it raises (or as it ended, with an error of its own)
                # (its final messages may be the lost ones: not listed)
                lost = error_summary(str(store_failure(self.path, writer.error)))
                if raise_errors:
                    params = ("error", params[1], None, None, lost, *params[5:])
                else:  # its own error (or limit) on its way: kept, the loss said too
                    error = f"{params[4]}; {lost}" if params[4] else lost
                    params = (params[0], params[1], params[2], None, error, *params[5:])
                await asyncio.to_thread(mark_failed, self.path, _END_RUN, params)

    async def _close(self, *, raise_errors: bool) -> None:
        writer, self.writer = self.writer, None
        if writer is None:
            return
        try:
            await writer.aclose()
        except RunStoreError as ex:
            if raise_errors:
                raise
            # another error is on its way (the run's, or this very one from opening): a
            # traceback here would only bury it
            logging.getLogger("loopwright.log").debug("closing the run store failed: %s", ex)
