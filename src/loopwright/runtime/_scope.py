"""``RunScope``: the one scope that opens a run, a sample of a run, or a span of the run
it is nested in, and records how it ended — once, by the scope that owns it.

``lw.recording()`` (``_recording.py``) and ``lw.run()`` open one; so can any custom loop::

    async with lw.recording(name="calc", model="mock", input=question) as rec:
        ...                                   # model and tool calls are recorded
        rec.finish(output=state.output, messages=state.messages)

The eval runner opens each dataset item as a sample of one run::

    async with lw.recording(name="arithmetic", model=model) as rec:
        async with rec.sample("item-1", input=item.input) as s:
            ...
            s.finish(output=..., scores={"match": 1.0})

A scope opened inside another (a run within a run: an agent used as a tool) is a span of
the outer one unless it asks for a new run. The scope decides; the run store
(:class:`~loopwright.log.RunRecorder`) only writes what the transcripts hear and the
rows the scope gives it. How ending is recorded once: ``_ending.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from .._errors import ConfigurationError
from .._ids import new_id
from ..limits import LimitExceededError, LimitInfo
from ..log import RunRecorder, RunStatus, RunStoreError, resolve_db
from ..log._resume_point import RESUME_SOURCE, ResumePoint, resume_mark
from ..model import ChatMessage, Model
from ..stores import Store, current_store
from ..transcripts import (
    EventSubscriber,
    Transcript,
    checkpoint_store,
    current_transcript,
    span,
)
from ._cost import CostTally
from ._ending import ScopeEnding
from ._in_force import InForce, _active, _reopen, current_recording

__all__ = ["RunScope", "current_recording"]


class RunScope:
    """An open run, sample or span: its store and transcript are the current ones, and
    everything recorded streams to the run store. Create it with :func:`recording` (a
    run) or :meth:`sample` (a sample of a run).

    Attributes:
        kind: ``"run"`` (a run, or a span of the run it is nested in) or ``"sample"``.
        run_id: The run's id in the run store (a sample's and a span's: their run's).
        db_path: The run store file (``None`` when not persisted).
        nested: ``True`` for a run opened inside another: a span of that run, sharing
            its store and transcript.
        key: A sample's stream key in the run store (unique within the run); ``""``.
        id: A sample's dataset item id (``""`` for a run).
        epoch: A sample's epoch (repetition) number.
        scores: A sample's scores, once finished.
        run: A sample's run (``None`` for a run).
        cost: What the model calls made inside the scope cost so far
            (:class:`~loopwright.runtime._cost.CostTally`); a run's total is kept with
            its row in the run store.
    """

    # (a live run holds one: no __dict__, ~1.5 KB less per run)
    __slots__ = (
        "_contexts",
        "_db",
        "_depth",
        "_ending",
        "_entered",
        "_exiting",
        "_log_level",
        "_new_run",
        "_record_calls",
        "_recorder",
        "_span",
        "_store",
        "_store_error",
        "_subscribers",
        "_task",
        "_transcript",
        "_unfollow",
        "cost",
        "db_path",
        "epoch",
        "id",
        "input",
        "key",
        "kind",
        "metadata",
        "model",
        "name",
        "nested",
        "run",
        "run_id",
        "scores",
        "target",
        "within",
    )

    def __init__(
        self,
        *,
        kind: Literal["run", "sample"] = "run",
        name: str | None = None,
        model: str | Model | None = None,
        input: Any = None,
        db: str | os.PathLike[str] | Literal[False] | None = None,
        metadata: Mapping[str, Any] | None = None,
        log_level: int = logging.INFO,
        subscribers: Sequence[EventSubscriber] = (),
        new_run: bool = False,
        record_calls: bool = True,
        depth: int | None = None,
        run: RunScope | None = None,
        id: str = "",
        epoch: int = 1,
        target: Any = None,
    ) -> None:
        if (kind == "sample") != (run is not None):
            raise ConfigurationError(
                "a sample is opened on its run (rec.sample(...)), and only a sample has a run"
            )
        self.kind, self.name, self.input = kind, name, input
        self.model = model.name if isinstance(model, Model) else model
        self.metadata = dict(metadata or {})
        self.run, self.id, self.epoch, self.target = run, id, epoch, target
        self.key = new_id() if kind == "sample" else ""
        self.scores: dict[str, Any] | None = None
        self.run_id: str = run.run_id if run is not None else ""
        self.db_path: Path | None = run.db_path if run is not None else None
        self.nested = False
        self.within: RunScope | None = None  # the sample a span is the run of, if any
        self._db, self._log_level, self._subscribers = db, log_level, tuple(subscribers)
        self._new_run, self._record_calls, self._depth = new_run, record_calls, depth
        self._transcript: Transcript | None = None
        self._store: Store | None = None
        self._recorder: RunRecorder | None = run._recorder if run is not None else None
        self._ending: ScopeEnding | None = None
        self._contexts: InForce | None = None
        self._span: span | None = None
        self._entered = False
        self._unfollow: Callable[[], None] | None = None
        # the run store failed: the task that entered is cancelled, and the cancellation
        # becomes a RunStoreError on leaving (like a time limit's)
        self._task: asyncio.Task[Any] | None = None
        self._store_error: BaseException | None = None
        self._exiting = False
        self.cost = CostTally()

    def __repr__(self) -> str:
        what = f"sample {self.id!r} of " if self.kind == "sample" else ""
        return f"RunScope({what}{self.run_id!r}, {self.name!r})"

    @property
    def transcript(self) -> Transcript:
        """The scope's transcript (once entered)."""
        if self._transcript is None:
            raise RuntimeError("the run scope has not been entered (use `async with`)")
        return self._transcript

    @property
    def store(self) -> Store:
        """The scope's store (once entered)."""
        if self._store is None:
            raise RuntimeError("the run scope has not been entered (use `async with`)")
        return self._store

    @property
    def status(self) -> RunStatus:
        """``running`` until :meth:`finish` is called or the block is left."""
        return self._ending.status if self._ending is not None else "running"

    # --- opening ------------------------------------------------------------------------
    async def __aenter__(self) -> RunScope:
        if self._entered:
            raise RuntimeError("a run scope can be entered once; call recording() again")
        self._entered = True
        around = _active.get()
        outer = around._ending if around is not None else None
        if self.kind == "sample":
            self._open_sample()
            self._ending = ScopeEnding(outer, None)
        elif around is not None and not self._new_run and current_transcript() is not None:
            self._open_span(around)
            self._ending = ScopeEnding(outer, self._depth)
        else:
            await self._open_run()
            self._ending = ScopeEnding(None, self._depth)  # a run of its own: says its own end
        contexts = self._contexts = InForce(self)
        contexts.__enter__()
        return self

    def _leave(self) -> None:
        """Leave what :class:`InForce` put in force, innermost first."""
        contexts, self._contexts = self._contexts, None
        if contexts is not None:
            contexts.__exit__(None, None, None)

    def _open_span(self, around: RunScope) -> None:
        self.nested = True
        self.within = around if around.kind == "sample" else None
        self.run_id, self.db_path = around.run_id, around.db_path
        self._recorder = around._recorder  # (for flush(): the run around writes the rows)
        self._transcript = current_transcript()
        self._store = current_store() or around._store
        self._span = span(self.name or "run", type="run")
        self._span.__enter__()

    async def _open_run(self) -> None:
        if not self._record_calls and self._db is not False:
            raise ConfigurationError(
                "a run that records no calls cannot be kept in the run store: pass db=False "
                "with record_calls=False (run(..., transcript=False))"
            )
        point = _reopen.get()
        _reopen.set(None)  # (a run it opens is a run of its own)
        self.run_id = new_id() if point is None else point.run_id
        self._transcript = t = Transcript(
            log_level=self._log_level,
            subscribers=self._subscribers,
            record_calls=self._record_calls,
        )
        self._store = Store()
        if self._db is False:
            return
        self.db_path = resolve_db(self._db)
        if point is None:
            recorder = RunRecorder(self.db_path, self.run_id)
            await recorder.open(
                name=self.name,
                model=self.model,
                input=self.input,
                metadata=self.metadata,
                store_id=self._store.id,
            )
        else:
            recorder = await self._reopen_run(point)
        self._recorder = recorder
        self._unfollow = recorder.follow(t)
        if point is not None:
            t.info(resume_mark(point), source=RESUME_SOURCE)
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def stop(error: BaseException) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: run over
                loop.call_soon_threadsafe(self._stop, error)

        recorder.on_failure(stop)

    async def _reopen_run(self, point: ResumePoint) -> RunRecorder:
        """The run store's side of a resumed run: its recorded store, cost and row."""
        assert self.db_path is not None and self._store is not None
        self._store = Store(point.store)
        self._store.checkpoint()  # (recorded already)
        self._store.id = point.store_id or self._store.id
        used = point.consumed
        self.cost.priced, self.cost.priced_calls = used.cost, used.priced_calls
        self.cost.unpriced_calls = used.unpriced_calls
        recorder = RunRecorder(self.db_path, self.run_id, point.next_seq, point.next_message_seq)
        await recorder.reopen(resumes=point.resumes + 1, holder=point.holder)
        return recorder

    def _open_sample(self) -> None:
        run = self.run
        assert run is not None
        self._transcript = Transcript(log_level=run._log_level, subscribers=run._subscribers)
        self._store = Store()
        if self._recorder is not None:
            self._unfollow = self._recorder.follow(self._transcript, self.key)
            self._recorder.open_sample(
                self.key,
                id=self.id,
                epoch=self.epoch,
                input=self.input,
                target=self.target,
                metadata=self.metadata,
                store_id=self._store.id,
            )

    # --- ending -------------------------------------------------------------------------
    def finish(
        self,
        *,
        output: Any = None,
        messages: Sequence[ChatMessage] | None = None,
        error: BaseException | str | None = None,
        limit: LimitInfo | LimitExceededError | None = None,
        status: RunStatus | None = None,
        scores: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> None:
        """Say how the run (or sample) ended (else leaving the ``async with`` block
        decides: an exception makes it ``error``/``limit``/``cancelled``, none
        ``success``). ``reason``: why a ``stopped``/``waiting`` one did not finish, kept
        in its row's ``error`` column (redacted, bounded) with no ``ErrorEvent``.

        Records a ``LimitEvent``/``ErrorEvent`` for ``limit``/``error`` (unless a scope
        inside this one recorded that very one), stores the final ``messages`` (each
        message once), the ``output`` (any JSON-serialisable value, e.g. a
        ``ModelOutput``) and, for a sample, its ``scores``.
        """
        if self._ending is None:
            raise RuntimeError("the run scope has not been entered (use `async with`)")
        if scores is not None:
            self.scores = dict(scores)
        self._ending.set(
            self.transcript,
            status=status,
            output=output,
            messages=messages,
            error=error,
            limit=limit,
            reason=reason,
        )

    def owns(self, error: LimitExceededError) -> bool:
        """Whether a limit that reached this scope is its own to end on (else it belongs
        to a run around this one, and passes on)."""
        return self._ending is None or self._ending.owns(error.limit)

    async def flush(self) -> None:
        """Wait until everything recorded so far is in the run store."""
        if self._recorder is not None:
            await self._recorder.flush()

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
        t, ending = self.transcript, self._ending
        assert ending is not None
        if self._span is not None:  # a span of the run around: its end is the run's to write
            try:
                if exc is not None:
                    ending.from_exception(t, exc)
                ending.leave(exc, pass_limit=True)
            finally:
                self._leave()
                self._span.__exit__(exc_type, exc, tb)
            return
        if self.kind == "sample":
            try:
                ending.from_exception(t, exc)
                ending.leave(exc, pass_limit=False)  # (an eval's run does not end on it)
                checkpoint_store(t)
            finally:
                self._leave()
                self._let_go()
            if self._recorder is not None:
                self._recorder.end_sample(self.key, ending.row, self.scores)
            return
        await self._end_run(exc, ending)

    async def _end_run(self, exc: BaseException | None, ending: ScopeEnding) -> None:
        self._exiting = True
        t, recorder = self.transcript, self._recorder
        failure: RunStoreError | None = None
        failed = self._store_error or (recorder.error if recorder is not None else None)
        if failed is not None and recorder is not None:
            failure = recorder.failure(failed)
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
                ending.done = False  # recorded as this error, whatever finish() said
        try:
            ending.from_exception(t, exc)
            checkpoint_store(t)
        finally:
            self._leave()
            self._let_go()
        if recorder is None:
            return
        row = dataclasses.replace(
            ending.row, cost=self.cost.dollars, unpriced_calls=self.cost.unpriced_calls
        )
        await recorder.end(row, failed=failure is not None, raise_errors=exc is None)
        if failure is not None and exc is failure:
            raise failure from failed

    def _let_go(self) -> None:
        """Stop writing what the transcript hears: what is recorded from now on is not
        this scope's."""
        if self._unfollow is not None:
            self._unfollow()
            self._unfollow = None

    def sample(
        self,
        id: str | int,
        *,
        epoch: int = 1,
        input: Any = None,
        target: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RunScope:
        """Open one sample (dataset item) of this run: ``async with rec.sample(...)``
        gives it its own store and transcript (streamed as the sample's events)."""
        self.transcript  # noqa: B018 - raises if not entered
        if self.kind == "sample" or self.nested:
            raise RuntimeError("samples are opened on a run of their own, not on a sample or span")
        return RunScope(
            kind="sample",
            run=self,
            id=str(id),
            epoch=epoch,
            input=input,
            target=target,
            metadata=metadata,
        )
