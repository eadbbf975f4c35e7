"""The evaluation runner: samples concurrently, each recorded, isolated, resumable."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from pydantic import ValidationError

from .._errors import ConfigurationError, error_text
from ..agents import AgentState
from ..agents._version import run_versions
from ..limits import LimitInfo
from ..log import RunStoreError, SampleInfo, default_db_path, load_run, resolve_db
from ..log._claims import claim_samples, claimed_by
from ..log._db import hostname
from ..log._info import _alive as alive
from ..log._resume_point import ResumePoint, carried, resume_point
from ..model import Model, UserMessage, default_model, model_hook
from ..runtime import RunScope, recording, run
from ..runtime._resume import check_not_running, continue_sample
from ._continued import with_earlier_step
from ._follow import EvalProgress, TokenCounter
from ._results import (
    DONE,
    EvalResult,
    SampleResult,
    carried_status,
    mark_all_failed,
    record_metrics,
    sample_ending,
)
from ._sample import Sample
from ._sandbox import sample_agent
from ._score import Score
from ._shard import Shard, finished_samples, recorded_params
from ._task import Task, TaskError, load_tasks

__all__ = ["EvalProgress", "TaskSpec", "default_max_samples", "run_metadata"]

_metadata: ContextVar[Mapping[str, Any] | None] = ContextVar("loopwright_eval_meta", default=None)


@contextlib.contextmanager
def run_metadata(extra: Mapping[str, Any]) -> Iterator[None]:
    """Add ``extra`` to the metadata of the runs evaluations make in this context (the
    command line records its options: ``loopwright runs resume``)."""
    token = _metadata.set({**(_metadata.get() or {}), **extra})
    try:
        yield
    finally:
        _metadata.reset(token)


def default_max_samples(model: Model) -> int:
    """Samples in flight when ``max_samples`` is not given: as many as the model takes
    calls at once (its ``max_connections``; 1 for the embedded model, whose calls run one
    at a time and reuse the cache of the conversation before, 10 for API providers)."""
    return model.config.max_connections or model.api.default_max_connections()


TaskSpec: TypeAlias = "Task | str"
"""A :class:`Task`, or where to find one: ``FILE.py``, ``FILE.py@name``, a registered
task's name."""


def _cancelled() -> bool:
    """Whether the running task is being cancelled (not merely seeing a CancelledError)."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _scores_of(info: SampleInfo) -> dict[str, Score] | None:
    """A stored sample's scores, ``None`` when they cannot be read back as finite scores
    (a NaN an older version stored as null, a row written by hand)."""
    try:
        scores = {str(k): Score.model_validate(v) for k, v in (info.scores or {}).items()}
    except ValidationError:
        return None
    return scores if all(math.isfinite(s.value) for s in scores.values()) else None


def _readable(
    found: dict[tuple[str, int], tuple[SampleInfo, str]],
) -> dict[tuple[str, int], tuple[SampleInfo, str]]:
    """The samples of ``found`` whose scores read back: the others run again."""
    return {k: v for k, v in found.items() if _scores_of(v[0]) is not None}


def _answer_of(output: Any) -> str | None:
    """The text of a recorded ``ModelOutput`` (JSON)."""
    if isinstance(output, Mapping):
        message = output.get("message")
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            return str(message["content"])
    return None


def _resolve(
    tasks: TaskSpec | Sequence[TaskSpec], task_args: Mapping[str, Any] | None
) -> list[Task]:
    items: Sequence[TaskSpec] = [tasks] if isinstance(tasks, (Task, str)) else tasks
    out: list[Task] = []
    for item in items:
        if isinstance(item, Task):
            if task_args:
                raise TaskError("task_args apply to tasks named by file or name, not Task objects")
            out.append(item)
        elif isinstance(item, str):
            out.extend(load_tasks(item, task_args))
        else:
            raise TaskError(f"expected a Task or a task name/file, got {type(item).__name__}")
    if not out:
        raise TaskError("no tasks to evaluate")
    return out


class _TaskRun:
    """One task's evaluation: its recording, its workers, its result."""

    def __init__(
        self,
        task: Task,
        *,
        model: Model,
        max_samples: int,
        epochs: int,
        limit: int | None,
        db: str | os.PathLike[str] | Literal[False] | None,
        resume: str | None,
        progress: EvalProgress,
        shard: Shard | None = None,
        merge: Sequence[str | os.PathLike[str]] = (),
        force: bool = False,
    ) -> None:
        self.task, self.model, self.max_samples = task, model, max_samples
        self.force = force
        self.epochs, self.limit, self.db, self.resume = epochs, limit, db, resume
        self.progress, self.shard, self.merge = progress, shard, merge
        samples = task.dataset.samples
        self.samples = samples[:limit] if limit is not None else samples
        self.plan = [(s, e) for s in self.samples for e in range(1, epochs + 1)]
        if shard is not None:
            mine = shard.select(task.name, [(str(s.id), e) for s, e in self.plan])
            self.plan = [(s, e) for s, e in self.plan if (str(s.id), e) in mine]
        # samples of the resumed run that stopped unfinished: (id, epoch) -> their key
        self.unfinished: dict[tuple[str, int], str] = {}
        self.result = EvalResult(
            task=task.name,
            model=model.name,
            total=len(self.plan),
            started=datetime.now(UTC),
            params=dict(task.params),
            resumed_from=resume,
        )

    def _prior(self) -> dict[tuple[str, int], tuple[SampleInfo, str]]:
        """The samples of earlier runs that need not run again, with their run's id:
        those of the resumed run, of the stores merged, and (for a shard) of the
        shard's earlier runs in this run store."""
        task, scored = self.task, bool(self.task.scorer)
        found: dict[tuple[str, int], tuple[SampleInfo, str]] = {}
        if self.merge:
            found.update(
                finished_samples(self.merge, task=task.name, params=task.params, scored=scored)
            )
        if self.shard is not None and self.db is not False and self.resume is None:
            here = self.db if self.db is not None else default_db_path()
            mine = finished_samples(
                [here], task=task.name, params=task.params, shard=self.shard, scored=scored
            )
            found.update({k: v for k, v in mine.items() if k[1] <= self.epochs})
        if self.resume is None:
            return _readable(found)
        db = self.db if self.db is not False else None
        with load_run(self.resume, db=db) as log:
            info = log.info
            if info.name != self.task.name:
                raise TaskError(
                    f"cannot resume run {info.id!r}: it evaluated {info.name!r}, not "
                    f"{self.task.name!r}"
                )
            what = f"run {info.id!r}"
            check_not_running(info.status, info.host, info.pid, what, force=self.force)
            self.result.resumed_from = info.id
            in_flight: dict[tuple[str, int], SampleInfo] = {}
            for s in log.samples:
                if s.status in DONE and (s.scores is not None or not scored):
                    found[(s.id, s.epoch)] = (s, info.id)
                elif s.status in ("running", "cancelled", "waiting"):  # not done: go on
                    in_flight[(s.id, s.epoch)] = s
        taken = [s for k, s in in_flight.items() if k not in found]
        for s in taken:  # taken by another resume (whose process is alive)?
            host, pid = claimed_by(s.metadata)
            if pid == os.getpid() and host == hostname() and not self.force:
                raise ConfigurationError(
                    f"sample {s.key!r} of {what} was taken by a resume in this process: "
                    "resume it once that one ended, with force=True"
                )
            local = host == hostname()
            if pid is not None and (not local or (pid != os.getpid() and alive(pid))):
                check_not_running(
                    "running",
                    host,
                    pid,
                    f"sample {s.key!r} of {what} (taken by a resume)",
                    force=self.force,
                )
        # take them, or be refused if another resume took one meanwhile
        holders = [(s.key, s.status, claimed_by(s.metadata)) for s in taken]
        claim_samples(resolve_db(db), info.id, holders)
        self.unfinished = {(s.id, s.epoch): s.key for s in taken}
        return _readable(found)

    async def __call__(self) -> EvalResult:
        task, result = self.task, self.result
        t0 = time.monotonic()
        prior = self._prior()
        plan = self.plan
        pending = [(s, e) for s, e in plan if (str(s.id), e) not in prior]
        metadata = {
            "kind": "eval",
            "task": task.name,
            "params": recorded_params(task.params),  # (never a secret in the store)
            "dataset": task.dataset.location or task.dataset.name,
            "samples": len(self.samples),
            "epochs": self.epochs,
            "scorers": [s.name for s in task.scorer],
            "resumed_from": result.resumed_from,
            "shard": str(self.shard) if self.shard is not None else None,
            # the solver's version and its tools' (agents/_version.py), for diff_runs
            "versions": run_versions(task.agent),
            **(_metadata.get() or {}),
            **task.metadata,
        }
        try:
            async with recording(
                name=task.name, model=self.model, db=self.db, metadata=metadata
            ) as rec:
                result._opened = True
                if rec.db_path is not None:  # no run id to offer for a run not stored
                    result.run_id, result.db = rec.run_id, str(rec.db_path)
                try:
                    for s, e in plan:
                        if (str(s.id), e) in prior:
                            await self._carry(rec, *prior[(str(s.id), e)])
                    self.progress.task_started(task, result, len(pending))
                    await self._work(rec, pending)
                except asyncio.CancelledError:
                    result.status = "cancelled"
                    raise
                except Exception as ex:
                    result.status, result.error = "error", error_text(ex)
                    raise
                finally:
                    record_metrics(task.scorer, result)
                    result.duration = time.monotonic() - t0
                    mark_all_failed(result)
                    rec.finish(output=self._summary(), status=result.status, error=result.error)
        except asyncio.CancelledError:
            result.status = "cancelled"
            self.progress.task_finished(result)
            raise
        except Exception as ex:
            if not result._opened:
                raise  # the run could not even be opened: tell the caller
            result.status = "error"
            result.error = result.error or error_text(ex)
            result.duration = time.monotonic() - t0
        self.progress.task_finished(result)
        return result

    def _summary(self) -> dict[str, Any]:
        r = self.result
        return {
            "metrics": r.metrics,
            "total": r.total,
            "completed": r.completed,
            "scored": r.scored,
            "errors": r.errors,
            "limits": r.limits,
            "stopped": r.stopped,
            "waiting": r.waiting,
            "tokens": r.tokens,
        }

    async def _work(self, rec: RunScope, pending: list[tuple[Sample, int]]) -> None:
        items: Iterator[tuple[Sample, int]] = iter(pending)

        async def worker() -> None:
            for sample, epoch in items:
                # each sample in a task of its own: a context of its own, so that
                # nothing one sample leaves in contextvars reaches the next
                await asyncio.create_task(self._run_sample(rec, sample, epoch))

        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(min(self.max_samples, len(pending))):
                    tg.create_task(worker())
        except BaseExceptionGroup as group:
            # a failure outside any sample (the run store): surface the first one
            raise group.exceptions[0] from None

    async def _carry(
        self, rec: RunScope, info: SampleInfo, source: str, mark: str = "resumed_from"
    ) -> None:
        """Copy a sample of an earlier run (``source``, named in the sample's metadata
        under ``mark``) into this run, as it ended: done (:data:`DONE`), or ``waiting``
        (a shard's, on Ray)."""
        scores = {k: Score.model_validate(v) for k, v in (info.scores or {}).items()}
        limit = LimitInfo.model_validate(info.limit) if info.limit else None
        status = carried_status(info.status)
        reason = info.error if status in ("stopped", "waiting") else None
        stored = None if status == "waiting" else {k: v.model_dump() for k, v in scores.items()}
        async with rec.sample(
            info.id,
            epoch=info.epoch,
            input=info.input,
            target=info.target,
            metadata={**info.metadata, mark: source},
        ) as srec:
            srec.finish(
                output=info.output,
                scores=stored,
                limit=limit,
                status=status,
                reason=reason,
            )
        self.result.samples.append(
            SampleResult(
                id=info.id,
                epoch=info.epoch,
                status=status,
                scores=scores,
                answer=_answer_of(info.output),
                reason=reason,
                limit=limit,
                resumed=True,
            )
        )

    def _resume_point(self, sample: Sample, epoch: int) -> ResumePoint | None:
        """Where the resumed run left ``sample`` in flight (``None``: it starts anew)."""
        key = self.unfinished.get((str(sample.id), epoch))
        if key is None or self.resume is None:
            return None
        db = self.db if self.db is not False else None
        point = resume_point(self.result.resumed_from or self.resume, db, sample=key)
        return with_earlier_step(point, db)  # (it waited again: its step is the part's before)

    async def _run_sample(self, rec: RunScope, sample: Sample, epoch: int) -> None:
        task = self.task
        counter = TokenCounter(self.progress)
        out = SampleResult(id=str(sample.id), epoch=epoch, status="success")
        t0 = time.monotonic()
        input = sample.fresh_input()
        state = AgentState(
            messages=[UserMessage(content=input)] if isinstance(input, str) else input
        )
        point = self._resume_point(sample, epoch)
        metadata = sample.metadata if point is None else {**sample.metadata, **carried(point)}
        async with rec.sample(
            str(sample.id),
            epoch=epoch,
            input=sample.input,
            target=sample.target,
            metadata=metadata,
        ) as srec:
            with model_hook(counter), default_model(self.model), contextlib.ExitStack() as stack:
                try:
                    agent, model = sample_agent(task, sample), None
                    if point is not None:  # in flight when the resumed run stopped: go on
                        agent, state, model = stack.enter_context(
                            continue_sample(point, agent, srec, kept=task.agent)
                        )
                    # the sandbox starts inside the sample's limits (its wait for a slot
                    # counts), its cleanup outside them: see sample_agent
                    state = await run(
                        agent,
                        state,
                        model=model,
                        limits=task.fresh_limits(),
                        approval=task.approval,
                        sandbox=task.sandbox,
                    )
                    # a sample waiting for approval has no answer yet: it is not scored
                    waits = state.completed == "waiting"
                    scores = {} if waits else {s.name: await s(state, sample) for s in task.scorer}
                except RunStoreError:
                    raise  # the store failed, not the sample: the eval stops (see _work)
                except asyncio.CancelledError as ex:
                    if _cancelled():
                        raise
                    # raised by the sample's code, nobody cancelled it: it failed (else
                    # its worker would end, leaving the samples after it unrun)
                    stray = RuntimeError(f"the sample raised {error_text(ex)} uncancelled")
                    out.status, out.error = "error", error_text(stray)
                    srec.finish(output=state.output, messages=state.messages, error=stray)
                except Exception as ex:
                    out.status, out.error = "error", error_text(ex)
                    srec.finish(output=state.output, messages=state.messages, error=ex)
                else:
                    out.scores, out.limit = scores, state.limit
                    out.status, out.reason = sample_ending(state)
                    srec.finish(
                        output=state.output,
                        messages=state.messages,
                        scores=None if waits else {k: v.model_dump() for k, v in scores.items()},
                        limit=state.limit,
                        status=out.status,
                        reason=out.reason,
                    )
        out.answer = state.text if state.output is not None else None
        out.tokens, out.time = counter.total, time.monotonic() - t0
        self.result.samples.append(out)
        self.progress.sample_finished(out)
