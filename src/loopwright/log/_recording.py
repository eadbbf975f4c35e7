"""``recording()``: open a run — its store and transcript — and stream it to the run store.

``run()`` uses it; so can any custom loop::

    async with lw.recording(name="calc", model="mock", input=question) as rec:
        ...                                   # model and tool calls are recorded
        rec.finish(output=state.output, messages=state.messages)

The eval runner records each dataset item as a sample of one run::

    async with lw.recording(name="arithmetic", model=model) as rec:
        async with rec.sample("item-1", input=item.input) as s:
            ...
            s.finish(output=..., scores={"match": 1.0})
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from .._errors import ConfigurationError
from .._ids import new_id
from ..limits import LimitExceededError, LimitInfo
from ..model import ChatMessage, Model
from ..stores import Store, current_store, store_context
from ..transcripts import (
    EventSubscriber,
    Transcript,
    checkpoint_store,
    current_transcript,
    span,
    transcript_context,
)
from ._db import RunStoreError, hostname, resolve_db
from ._outcome import Outcome, RunStatus, Sink, json_text, mark_failed
from ._sample import SampleRecording
from ._writer import RunWriter, store_failure

__all__ = ["Recording", "RunStatus", "SampleRecording", "current_recording", "recording"]

_active: ContextVar[Recording | None] = ContextVar("loopwright_recording", default=None)


def current_recording() -> Recording | None:
    """The run being recorded in this context, if any."""
    return _active.get()


class Recording:
    """An open run: its store and transcript are the current ones, and everything
    recorded streams to the run store. Create it with :func:`recording`.

    Attributes:
        run_id: The run's id in the run store.
        db_path: The run store file (``None`` when not persisted).
        transcript: The run's transcript.
        store: The run's store.
        nested: ``True`` when opened inside another recording: then it is a span of
            that run, sharing its store and transcript.
    """

    def __init__(
        self,
        *,
        name: str | None,
        model: str | Model | None,
        input: Any,
        db: str | os.PathLike[str] | Literal[False] | None,
        metadata: Mapping[str, Any] | None,
        log_level: int,
        subscribers: Sequence[EventSubscriber],
        new_run: bool,
        record_calls: bool = True,
    ) -> None:
        self.name = name
        self._record_calls = record_calls
        self.model = model.name if isinstance(model, Model) else model
        self.input = input
        self.metadata = dict(metadata or {})
        self._db = db
        self._log_level = log_level
        self._subscribers = tuple(subscribers)
        self._new_run = new_run
        self.run_id = ""
        self.db_path: Path | None = None
        self.nested = False
        self._transcript: Transcript | None = None
        self._store: Store | None = None
        self._writer: RunWriter | None = None
        self._seq = itertools.count()
        self._outcome = Outcome()
        self._stack = contextlib.ExitStack()
        self._span: span | None = None
        self._entered = False
        self._unsubscribe: Callable[[], None] | None = None
        # the run store failed: the task that entered is cancelled, and the cancellation
        # becomes a RunStoreError on leaving (like a time limit's)
        self._task: asyncio.Task[Any] | None = None
        self._store_error: BaseException | None = None
        self._exiting = False

    def __repr__(self) -> str:
        return f"Recording({self.run_id!r}, {self.name!r})"

    @property
    def transcript(self) -> Transcript:
        """The run's transcript (once entered)."""
        if self._transcript is None:
            raise RuntimeError("the recording has not been entered (use `async with`)")
        return self._transcript

    @property
    def store(self) -> Store:
        """The run's store (once entered)."""
        if self._store is None:
            raise RuntimeError("the recording has not been entered (use `async with`)")
        return self._store

    async def __aenter__(self) -> Recording:
        if self._entered:
            raise RuntimeError("a recording can be entered once; call recording() again")
        self._entered = True
        parent = _active.get()
        if parent is not None and not self._new_run and current_transcript() is not None:
            self.nested = True
            self.run_id, self.db_path, self._writer = parent.run_id, parent.db_path, None
            self._transcript = current_transcript()
            self._store = current_store() or parent._store
            self._span = span(self.name or "run", type="run")
            self._span.__enter__()
            return self
        if not self._record_calls and self._db is not False:
            raise ConfigurationError(
                "a run that records no calls cannot be kept in the run store: pass db=False "
                "with record_calls=False (run(..., transcript=False))"
            )
        self.run_id = new_id()
        self._transcript = t = Transcript(
            log_level=self._log_level,
            subscribers=self._subscribers,
            record_calls=self._record_calls,
        )
        self._store = s = Store()
        if self._db is not False:
            self.db_path = resolve_db(self._db)
            self._writer = RunWriter(self.db_path)
            self._writer.execute(
                "INSERT INTO runs (id, name, model, status, created, input, metadata, "
                "store_id, host, pid) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (
                    self.run_id,
                    self.name,
                    self.model,
                    time.time(),
                    json_text(self.input),
                    json_text(self.metadata),
                    s.id,
                    hostname(),
                    os.getpid(),
                ),
            )
            try:
                await self._writer.opened()  # fail now if the file cannot be written
            except BaseException:
                await self._close_writer(raise_errors=False)
                raise
            sink = Sink(self._writer, self.run_id, "", self._seq)
            self._unsubscribe = t.subscribe(sink.on_event, on_message=sink.on_message)
            self._task = asyncio.current_task()
            loop = asyncio.get_running_loop()

            def stop(error: BaseException) -> None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: run over
                    loop.call_soon_threadsafe(self._stop, error)

            self._writer.on_error(stop)
        self._stack.enter_context(store_context(s))
        self._stack.enter_context(transcript_context(t))
        token = _active.set(self)
        self._stack.callback(_active.reset, token)
        return self

    def finish(
        self,
        *,
        output: Any = None,
        messages: Sequence[ChatMessage] | None = None,
        error: BaseException | str | None = None,
        limit: LimitInfo | LimitExceededError | None = None,
        status: RunStatus | None = None,
    ) -> None:
        """Say how the run ended (else leaving the ``async with`` block decides: an
        exception makes it ``error``/``limit``/``cancelled``, none ``success``).

        Records a ``LimitEvent``/``ErrorEvent`` for ``limit``/``error``, stores the final
        ``messages`` (each message once) and the ``output`` (any JSON-serialisable value,
        e.g. a ``ModelOutput``).
        """
        self._outcome.set(
            self.transcript,
            status=status,
            output=output,
            messages=messages,
            error=error,
            limit=limit,
        )

    async def flush(self) -> None:
        """Wait until everything recorded so far is in the run store."""
        if self._writer is not None:
            await self._writer.flush()

    def _stop(self, error: BaseException) -> None:
        """The run store failed (on the event loop, soon after): stop the run now rather
        than let it work on unrecorded, by cancelling the task that entered."""
        if self._exiting or self._store_error is not None:
            return
        self._store_error = error
        task = self._task
        if task is not None and not task.done():
            task.cancel(msg=f"loopwright: the run store {str(self.db_path)!r} failed")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        t = self.transcript
        if self.nested:
            assert self._span is not None
            if not self._outcome.done and exc is not None:
                self._outcome.from_exception(t, exc)
            self._span.__exit__(exc_type, exc, tb)
            return
        self._exiting = True
        failure: RunStoreError | None = None
        failed = self._store_error or (self._writer.error if self._writer is not None else None)
        if failed is not None and self.db_path is not None:
            failure = store_failure(self.db_path, failed)
            task = self._task
            # our own cancellation becomes the error (a Ctrl-C stays a cancellation), and
            # so does the end of a run that was not stopped in time
            if exc is None or (
                isinstance(exc, asyncio.CancelledError)
                and self._store_error is not None
                and task is not None
                and task.uncancel() == 0
            ):
                exc = failure
                self._outcome.done = False  # recorded as this error, whatever finish() said
        try:
            self._outcome.from_exception(t, exc)
            checkpoint_store(t)
        finally:
            self._stack.close()
            if self._unsubscribe is not None:  # what is recorded from now on is not ours
                self._unsubscribe()
                self._unsubscribe = None
        o = self._outcome
        update = (
            "UPDATE runs SET status = ?, finished = ?, output = ?, messages = ?, error = ?, "
            '"limit" = ? WHERE id = ?',
            (o.status, time.time(), o.output, o.messages, o.error, o.limit, self.run_id),
        )
        if failure is not None:
            writer, self._writer = self._writer, None
            if writer is not None:  # let go of the file (its error is `failure`)
                with contextlib.suppress(RunStoreError):
                    await writer.aclose()
            assert self.db_path is not None
            await asyncio.to_thread(mark_failed, self.db_path, *update)
            if exc is failure:
                raise failure from failed
            return
        if self._writer is not None:
            self._writer.execute(*update)
            await self._close_writer(raise_errors=exc is None)

    async def _close_writer(self, *, raise_errors: bool) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            await writer.aclose()
        except RunStoreError as ex:
            if raise_errors:
                raise
            # another error is on its way (the run's, or this very one from entering): a
            # traceback here would only bury it
            logging.getLogger("loopwright.log").debug("closing the run store failed: %s", ex)

    @property
    def status(self) -> RunStatus:
        """``running`` until :meth:`finish` is called or the block is left."""
        return self._outcome.status

    def sample(
        self,
        id: str | int,
        *,
        epoch: int = 1,
        input: Any = None,
        target: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SampleRecording:
        """Record one sample (dataset item) of this run: ``async with rec.sample(...)``
        gives it its own store and transcript (streamed as the sample's events)."""
        self.transcript  # noqa: B018 - raises if not entered
        return SampleRecording(self, str(id), epoch, input, target, metadata)


def recording(
    *,
    name: str | None = None,
    model: str | Model | None = None,
    input: Any = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
    metadata: Mapping[str, Any] | None = None,
    log_level: int = logging.INFO,
    subscribers: Sequence[EventSubscriber] = (),
    new_run: bool = False,
    record_calls: bool = True,
) -> Recording:
    """Open a run: ``async with recording(...) as rec:``.

    Within the block the run's new :class:`~loopwright.Store` and
    :class:`~loopwright.Transcript` are the current ones, model and tool calls are
    recorded, and every event and message streams to the run store by a background
    thread (batched transactions; the event loop never waits for the disk). Leaving the
    block records how the run ended and waits for the writes to finish.

    Inside another recording (a run within a run, e.g. an agent used as a tool) no new
    run is opened unless ``new_run=True``: the block is a span of the outer run and shares
    its store.

    Args:
        name: A name for the run (e.g. the agent's).
        model: The model (name) the run uses, for listings.
        input: What the run was given (JSON-serialisable, e.g. the prompt).
        db: The run store file; ``None``: ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``;
            ``False``: keep the run in memory only.
        metadata: Anything JSON-serialisable to keep with the run.
        log_level: Python log records at or above this level are recorded.
        subscribers: Also called with every event (see ``Transcript.subscribe``).
        new_run: Open a new run even inside another recording.
        record_calls: ``False``: record no model calls, tool calls or store changes in
            the transcript (see ``Transcript``); only with ``db=False``. A recording
            inside another records as the outer one does.

    If the run store fails while the block runs (the disk is full, the file is taken
    away), the run is stopped at once, at its next ``await``: the task that entered the
    block is cancelled (as a time limit does) and leaving the block raises
    :class:`RunStoreError`. What was committed before stays readable, and the run's end
    is recorded if the file still takes it.

    Raises:
        RunStoreError: (on entering) the run store cannot be written; (on leaving) it
            failed while the run was going.
        ConfigurationError: (on entering) ``record_calls=False`` with a run store.
    """
    return Recording(
        name=name,
        model=model,
        input=input,
        db=db,
        metadata=metadata,
        log_level=log_level,
        subscribers=subscribers,
        new_run=new_run,
        record_calls=record_calls,
    )
