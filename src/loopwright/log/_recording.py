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
import json
import logging
import os
import time
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias, TypeGuard

from .._errors import ConfigurationError, error_text
from .._ids import new_id
from ..limits import LimitExceededError, LimitInfo
from ..model import ChatMessage, Model
from ..store import Store, current_store, store_context
from ..transcript import (
    ErrorEvent,
    Event,
    EventSubscriber,
    LimitEvent,
    Transcript,
    checkpoint_store,
    current_transcript,
    span,
    transcript_context,
)
from ._db import RunStoreError, hostname, resolve_db
from ._writer import RunWriter, store_failure

__all__ = ["Recording", "RunStatus", "SampleRecording", "current_recording", "recording"]

RunStatus: TypeAlias = Literal["running", "success", "error", "cancelled", "limit"]
"""A run's (or sample's) status: ``running`` until it finishes (a run whose process died
stays ``running``; readers report it as ``interrupted``)."""

_active: ContextVar[Recording | None] = ContextVar("loopwright_recording", default=None)


def current_recording() -> Recording | None:
    """The run being recorded in this context, if any."""
    return _active.get()


def _json(value: Any) -> str | None:
    if value is None:
        return None
    from pydantic_core import to_jsonable_python

    try:
        data = to_jsonable_python(value)
    except Exception:
        data = repr(value)
    return json.dumps(data, separators=(",", ":"))


def _error_text(error: BaseException | str) -> str:
    return error if isinstance(error, str) else error_text(error)


def _is_limit(error: BaseException) -> TypeGuard[LimitExceededError]:
    return isinstance(error, LimitExceededError)


def _mark_failed(path: Path, sql: str, params: tuple[Any, ...]) -> None:
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


class _Sink:
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


class _Outcome:
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
                    tb = "".join(traceback.format_exception(error))
                name = type(error).__name__ if isinstance(error, BaseException) else "Error"
                t.record(ErrorEvent(error=name, message=str(error), traceback=tb))
                _mark_recorded(error)
            self.error = _error_text(error)
        if messages is not None:
            t.add_messages(messages)
            self.messages = json.dumps([m.id for m in messages])
        self.output = _json(output)
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
        self._outcome = _Outcome()
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
                    _json(self.input),
                    _json(self.metadata),
                    s.id,
                    hostname(),
                    os.getpid(),
                ),
            )
            try:
                await self._writer.flush()  # fail now if the file cannot be written
            except BaseException:
                await self._close_writer(raise_errors=False)
                raise
            sink = _Sink(self._writer, self.run_id, "", self._seq)
            self._unsubscribe = t.subscribe(sink.on_event, on_message=sink.on_message)
            self._task = asyncio.current_task()
            loop = asyncio.get_running_loop()

            def stop(error: BaseException) -> None:
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
            await asyncio.to_thread(_mark_failed, self.db_path, *update)
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


class SampleRecording:
    """One sample of a recorded run; see :meth:`Recording.sample`.

    Attributes:
        key: The sample's stream key in the run store (unique within the run).
        id: The dataset item's id.
        epoch: The epoch (repetition) number.
        transcript: The sample's transcript.
        store: The sample's store.
    """

    def __init__(
        self,
        run: Recording,
        id: str,
        epoch: int,
        input: Any,
        target: Any,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        self.run, self.id, self.epoch = run, id, epoch
        self.key = new_id()
        self.transcript = Transcript(log_level=run._log_level, subscribers=run._subscribers)
        self.store = Store()
        self._input, self._target, self._metadata = input, target, dict(metadata or {})
        self._outcome = _Outcome()
        self._stack = contextlib.ExitStack()
        self.scores: dict[str, Any] | None = None
        writer = run._writer
        self._unsubscribe: Callable[[], None] | None = None
        if writer is not None:
            sink = _Sink(writer, run.run_id, self.key, run._seq)
            self._unsubscribe = self.transcript.subscribe(sink.on_event, on_message=sink.on_message)

    async def __aenter__(self) -> SampleRecording:
        writer = self.run._writer
        if writer is not None:
            writer.execute(
                "INSERT INTO samples (run_id, key, id, epoch, status, created, input, target, "
                "metadata, store_id) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    self.run.run_id,
                    self.key,
                    self.id,
                    self.epoch,
                    time.time(),
                    _json(self._input),
                    _json(self._target),
                    _json(self._metadata),
                    self.store.id,
                ),
            )
        self._stack.enter_context(store_context(self.store))
        self._stack.enter_context(transcript_context(self.transcript))
        return self

    def finish(
        self,
        *,
        output: Any = None,
        messages: Sequence[ChatMessage] | None = None,
        scores: Mapping[str, Any] | None = None,
        error: BaseException | str | None = None,
        limit: LimitInfo | LimitExceededError | None = None,
        status: RunStatus | None = None,
    ) -> None:
        """Say how the sample ended, with its scores (see :meth:`Recording.finish`)."""
        self.scores = dict(scores) if scores is not None else None
        self._outcome.set(
            self.transcript,
            status=status,
            output=output,
            messages=messages,
            error=error,
            limit=limit,
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._outcome.from_exception(self.transcript, exc)
            checkpoint_store(self.transcript)
        finally:
            self._stack.close()
        o, writer = self._outcome, self.run._writer
        if self._unsubscribe is not None:
            self._unsubscribe()
        if writer is not None:
            writer.execute(
                "UPDATE samples SET status = ?, finished = ?, output = ?, messages = ?, "
                'scores = ?, error = ?, "limit" = ? WHERE run_id = ? AND key = ?',
                (
                    o.status,
                    time.time(),
                    o.output,
                    o.messages,
                    _json(self.scores),
                    o.error,
                    o.limit,
                    self.run.run_id,
                    self.key,
                ),
            )

    @property
    def status(self) -> RunStatus:
        """``running`` until :meth:`finish` is called or the block is left."""
        return self._outcome.status


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

    Raises:
        RunStoreError: (on entering) the run store cannot be written.
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
