"""The evaluation runner: samples concurrently, each recorded, isolated, resumable."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from .._errors import ConfigurationError, error_text
from ..agents import AgentState
from ..limits import LimitInfo
from ..log import RunStoreError, SampleInfo, load_run
from ..model import GenerateConfig, Model, UserMessage, default_model, get_model, model_hook
from ..runtime import RunScope, recording, run
from ._follow import EvalProgress, Quiet, TokenCounter
from ._results import EvalResult, SampleResult, compute_metrics, mark_all_failed
from ._sample import Sample
from ._sandbox import sample_agent
from ._score import Score
from ._task import Task, TaskError, load_tasks, on_sys_path

__all__ = ["EvalProgress", "TaskSpec", "default_max_samples", "eval", "eval_async"]


def default_max_samples(model: Model) -> int:
    """Samples in flight when ``max_samples`` is not given: as many as the model takes
    calls at once (its ``max_connections``; 1 for the embedded model, whose calls run one
    at a time and reuse the cache of the conversation before, 10 for API providers)."""
    return model.config.max_connections or model.api.default_max_connections()


TaskSpec: TypeAlias = "Task | str"
"""A :class:`Task`, or where to find one: ``FILE.py``, ``FILE.py@name``, a registered
task's name."""


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
    ) -> None:
        self.task, self.model, self.max_samples = task, model, max_samples
        self.epochs, self.limit, self.db, self.resume = epochs, limit, db, resume
        self.progress = progress
        samples = task.dataset.samples
        self.samples = samples[:limit] if limit is not None else samples
        self.result = EvalResult(
            task=task.name,
            model=model.name,
            total=len(self.samples) * epochs,
            started=datetime.now(UTC),
            params=dict(task.params),
            resumed_from=resume,
        )

    def _prior(self) -> dict[tuple[str, int], SampleInfo]:
        """The samples of the resumed run that need not run again."""
        if self.resume is None:
            return {}
        with load_run(self.resume, db=self.db if self.db is not False else None) as log:
            info = log.info
            if info.name != self.task.name:
                raise TaskError(
                    f"cannot resume run {info.id!r}: it evaluated {info.name!r}, not "
                    f"{self.task.name!r}"
                )
            self.result.resumed_from = info.id
            done: dict[tuple[str, int], SampleInfo] = {}
            for s in log.samples:
                scored = s.scores is not None or not self.task.scorer
                if s.status in ("success", "limit") and scored:
                    done[(s.id, s.epoch)] = s
            return done

    async def __call__(self) -> EvalResult:
        task, result = self.task, self.result
        t0 = time.monotonic()
        prior = self._prior()
        plan = [(s, e) for s in self.samples for e in range(1, self.epochs + 1)]
        pending = [(s, e) for s, e in plan if (str(s.id), e) not in prior]
        metadata = {
            "kind": "eval",
            "task": task.name,
            "params": task.params,
            "dataset": task.dataset.location or task.dataset.name,
            "samples": len(self.samples),
            "epochs": self.epochs,
            "scorers": [s.name for s in task.scorer],
            "resumed_from": result.resumed_from,
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
                            await self._carry(rec, prior[(str(s.id), e)])
                    self.progress.task_started(task, result, len(pending))
                    await self._work(rec, pending)
                except asyncio.CancelledError:
                    result.status = "cancelled"
                    raise
                except Exception as ex:
                    result.status, result.error = "error", error_text(ex)
                    raise
                finally:
                    result.metrics = compute_metrics(task.scorer, result.samples)
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

    async def _carry(self, rec: RunScope, info: SampleInfo) -> None:
        """Copy a finished sample of the resumed run into this run."""
        scores = {k: Score.model_validate(v) for k, v in (info.scores or {}).items()}
        limit = LimitInfo.model_validate(info.limit) if info.limit else None
        async with rec.sample(
            info.id,
            epoch=info.epoch,
            input=info.input,
            target=info.target,
            metadata={**info.metadata, "resumed_from": self.result.resumed_from},
        ) as srec:
            srec.finish(
                output=info.output,
                scores={k: v.model_dump() for k, v in scores.items()},
                limit=limit,
                status="limit" if info.status == "limit" else "success",
            )
        self.result.samples.append(
            SampleResult(
                id=info.id,
                epoch=info.epoch,
                status="limit" if info.status == "limit" else "success",
                scores=scores,
                answer=_answer_of(info.output),
                limit=limit,
                resumed=True,
            )
        )

    async def _run_sample(self, rec: RunScope, sample: Sample, epoch: int) -> None:
        task = self.task
        counter = TokenCounter(self.progress)
        out = SampleResult(id=str(sample.id), epoch=epoch, status="success")
        t0 = time.monotonic()
        input = sample.fresh_input()
        state = AgentState(
            messages=[UserMessage(content=input)] if isinstance(input, str) else input
        )
        async with rec.sample(
            str(sample.id),
            epoch=epoch,
            input=sample.input,
            target=sample.target,
            metadata=sample.metadata,
        ) as srec:
            with model_hook(counter), default_model(self.model):
                try:
                    # the sandbox starts inside the sample's limits (its wait for a slot
                    # counts), its cleanup outside them: see sample_agent
                    state = await run(
                        sample_agent(task, sample),
                        state,
                        limits=task.fresh_limits(),
                        approval=task.approval,
                        sandbox=task.sandbox,
                    )
                    scores = {s.name: await s(state, sample) for s in task.scorer}
                except RunStoreError:
                    raise  # the store failed, not the sample: the eval stops (see _work)
                except Exception as ex:
                    out.status, out.error = "error", error_text(ex)
                    srec.finish(output=state.output, messages=state.messages, error=ex)
                else:
                    out.scores, out.limit = scores, state.limit
                    out.status = "limit" if state.limit is not None else "success"
                    srec.finish(
                        output=state.output,
                        messages=state.messages,
                        scores={k: v.model_dump() for k, v in scores.items()},
                        limit=state.limit,
                    )
        out.answer = state.text if state.output is not None else None
        out.tokens, out.time = counter.total, time.monotonic() - t0
        self.result.samples.append(out)
        self.progress.sample_finished(out)


def _configured(model: str | Model | None, config: GenerateConfig | None) -> Model:
    """The model, with ``config`` over its own settings."""
    if config is None or not isinstance(model, Model):
        return get_model(model, config=config)
    return Model(model.api, model.config.merge(config), model.tool_protocol)


async def _eval(
    tasks: TaskSpec | Sequence[TaskSpec],
    *,
    model: str | Model | None,
    max_samples: int | None,
    epochs: int | None,
    limit: int | None,
    db: str | os.PathLike[str] | Literal[False] | None,
    resume: str | None,
    task_args: Mapping[str, Any] | None,
    progress: EvalProgress | None,
    collect: Callable[[EvalResult], None],
    config: GenerateConfig | None = None,
) -> list[EvalResult]:
    """:func:`eval_async`; ``config`` (the CLI's generation settings, with no model
    given) is merged over each task's model's own."""
    if max_samples is not None and max_samples < 1:
        raise ConfigurationError(f"max_samples must be at least 1, got {max_samples}")
    if epochs is not None and epochs < 1:
        raise ConfigurationError(f"epochs must be at least 1, got {epochs}")
    if limit is not None and limit < 1:
        raise ConfigurationError(f"limit must be at least 1, got {limit}")
    task_list = _resolve(tasks, task_args)
    if resume is not None and len(task_list) != 1:
        raise ConfigurationError("resume= needs exactly one task (a run is one task)")
    results: list[EvalResult] = []
    for task in task_list:
        chosen = _configured(model if model is not None else task.model, config)
        runner = _TaskRun(
            task,
            model=chosen,
            max_samples=max_samples or default_max_samples(chosen),
            epochs=epochs or task.epochs,
            limit=limit,
            db=db,
            resume=resume,
            progress=progress or Quiet(),
        )
        try:
            with on_sys_path(task._folder):  # the task file's code may import neighbours
                result = await runner()
        except asyncio.CancelledError:
            collect(runner.result)
            raise
        results.append(result)
        collect(result)
    return results


async def eval_async(
    tasks: TaskSpec | Sequence[TaskSpec],
    *,
    model: str | Model | None = None,
    max_samples: int | None = None,
    epochs: int | None = None,
    limit: int | None = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
    resume: str | None = None,
    task_args: Mapping[str, Any] | None = None,
    progress: EvalProgress | None = None,
) -> list[EvalResult]:
    """Evaluate tasks: run every sample of each (``max_samples`` at a time), score it,
    and record it in the run store — one run per task, one run-store sample per sample
    and epoch, each with its own store and transcript.

    A sample that raises is recorded as ``error`` (with its traceback) and is not
    scored; one ended by a limit is recorded as ``limit`` and scored on what it had.
    Neither stops the others, but a task whose every sample failed ends as ``error``
    (it measured nothing; ``result.error`` quotes the first failure). Cancelling stops
    the samples in flight (recorded as ``cancelled``), closes the run, and re-raises;
    ``resume=`` the run later to finish it.

    Args:
        tasks: A :class:`Task`, ``"FILE.py"``, ``"FILE.py@name"``, a registered task's
            name, or a list of these. Tasks run one after the other.
        model: The model evaluated (a name or a :class:`Model`); default: the task's
            ``model``, else the default model (``$LOOPWRIGHT_MODEL``, else ``local``).
        max_samples: Samples in flight at once (default: :func:`default_max_samples`).
        epochs: Runs per sample (default: the task's ``epochs``).
        limit: Only the first ``limit`` samples of each dataset.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``);
            ``False`` keeps nothing (and the results have no ``run_id``).
        resume: A run (id or unique prefix) of the same task: its scored samples are
            carried into the new run instead of running again.
        task_args: Arguments for tasks named by file or name (``@task`` parameters).
        progress: Told about progress (see :class:`EvalProgress`).

    Returns:
        One :class:`EvalResult` per task: its metrics are over the samples scored
        (``result.scored``); those that failed (``result.errors``) are not in them.

    Raises:
        TaskError: A task cannot be found or built: an unknown or badly typed task
            argument, a task with no samples (before any sample runs).
    """
    return await _eval(
        tasks,
        model=model,
        max_samples=max_samples,
        epochs=epochs,
        limit=limit,
        db=db,
        resume=resume,
        task_args=task_args,
        progress=progress,
        collect=lambda r: None,
    )


def eval(
    tasks: TaskSpec | Sequence[TaskSpec],
    *,
    model: str | Model | None = None,
    max_samples: int | None = None,
    epochs: int | None = None,
    limit: int | None = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
    resume: str | None = None,
    task_args: Mapping[str, Any] | None = None,
    progress: EvalProgress | None = None,
) -> list[EvalResult]:
    """:func:`eval_async` for scripts (not inside a running event loop).

    Ctrl-C stops cleanly: the samples in flight are cancelled and recorded, the run is
    closed, and the results so far are returned (the interrupted task's with
    ``status="cancelled"``; tasks not started are left out).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigurationError(
            "eval() called inside a running event loop; use await eval_async()"
        )
    done: list[EvalResult] = []
    try:
        return asyncio.run(
            _eval(
                tasks,
                model=model,
                max_samples=max_samples,
                epochs=epochs,
                limit=limit,
                db=db,
                resume=resume,
                task_args=task_args,
                progress=progress,
                collect=done.append,
            )
        )
    except KeyboardInterrupt:
        return done
