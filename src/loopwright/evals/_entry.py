"""``eval()`` and ``eval_async()``: evaluate tasks, one run per task (see ``_runner.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from .._collector import tuned_collector
from .._errors import ConfigurationError
from ..model import GenerateConfig, Model, get_model
from ._follow import EvalProgress, Quiet
from ._results import EvalResult
from ._runner import TaskSpec, _resolve, _TaskRun, default_max_samples
from ._shard import Shard
from ._task import on_sys_path

__all__ = ["eval", "eval_async"]


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
    shard: str | Shard | None = None,
    merge: Sequence[str | os.PathLike[str]] = (),
    backend: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_env: Sequence[str] = (),
    force: bool = False,
) -> list[EvalResult]:
    """:func:`eval_async`; ``config`` (the CLI's generation settings, with no model
    given) is merged over each task's model's own."""
    if max_samples is not None and max_samples < 1:
        raise ConfigurationError(f"max_samples must be at least 1, got {max_samples}")
    if epochs is not None and epochs < 1:
        raise ConfigurationError(f"epochs must be at least 1, got {epochs}")
    if limit is not None and limit < 1:
        raise ConfigurationError(f"limit must be at least 1, got {limit}")
    chosen_shard = Shard.parse(shard) if shard is not None else None
    if isinstance(merge, str | os.PathLike):
        merge = [merge]
    task_list = _resolve(tasks, task_args)
    if resume is not None and len(task_list) != 1:
        raise ConfigurationError("resume= needs exactly one task (a run is one task)")
    if backend not in ("local", "ray"):
        raise ConfigurationError(f"backend must be 'local' or 'ray', not {backend!r}")
    results: list[EvalResult] = []
    with contextlib.ExitStack() as stack:
        extra: dict[str, Any] = {}
        kind: type[_TaskRun] = _TaskRun
        if backend == "ray":
            from ._ray import RayTaskRun, forwarded_env, ray_options, ray_session

            kind = RayTaskRun
            extra = ray_options(tasks, model, config, task_args, max_samples, resume, shard)
            extra["ray"] = stack.enter_context(ray_session(ray_address))
            extra["env"] = forwarded_env(ray_env)
        for task in task_list:
            chosen = _configured(model if model is not None else task.model, config)
            runner = kind(
                task,
                model=chosen,
                max_samples=max_samples or default_max_samples(chosen),
                epochs=epochs or task.epochs,
                limit=limit,
                db=db,
                resume=resume,
                progress=progress or Quiet(),
                shard=chosen_shard,
                merge=merge,
                force=force,
                **extra,
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
    shard: str | Shard | None = None,
    merge: Sequence[str | os.PathLike[str]] = (),
    backend: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_env: Sequence[str] = (),
    force: bool = False,
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
            carried into the new run instead of running again, and those in flight
            when it stopped go on from their last step (taken by this process: of two
            resumes at once, one takes them). A run still running is refused.
        task_args: Arguments for tasks named by file or name (``@task`` parameters).
        progress: Told about progress (see :class:`EvalProgress`).
        shard: ``"I/N"``: run only this shard's share of the samples (by a stable hash
            of task, sample id and epoch; see ``evals/_shard.py``); running it again
            with the same run store carries over what it finished.
        merge: Run stores (of shards) whose finished samples of this task are carried
            into this run; what none of them finished is run, and the metrics are
            over all samples.
        backend: ``"ray"``: the samples run on the workers of a Ray cluster (the
            ``ray`` extra; see ``evals/_ray.py``), each worker running ``max_samples``
            at once; the task is given by file or name, the model by name or the
            task's own.
        ray_address: The Ray cluster (``"auto"``, ``"ray://host:10001"``); default: a
            local Ray started for the eval.
        ray_env: Names of environment variables (API keys...) sent to the workers.
        force: With ``resume``: resume a run (or samples taken by a resume) recorded as
            still running whose process is on another machine — when you know it is
            gone. One whose process is alive on this machine is refused even so.

    Returns:
        One :class:`EvalResult` per task: its metrics are over the samples scored
        (``result.scored``: those a hook stopped among them, ``result.stopped``); those
        that failed (``result.errors``) and those waiting for approval
        (``result.waiting``; the result's status is then ``waiting``, and ``resume=``
        continues them) are not in them.

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
        shard=shard,
        merge=merge,
        backend=backend,
        ray_address=ray_address,
        ray_env=ray_env,
        force=force,
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
    shard: str | Shard | None = None,
    merge: Sequence[str | os.PathLike[str]] = (),
    backend: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_env: Sequence[str] = (),
    force: bool = False,
    tune_collector: bool = False,
) -> list[EvalResult]:
    """:func:`eval_async` for scripts (not inside a running event loop).

    Ctrl-C stops cleanly: the samples in flight are cancelled and recorded, the run is
    closed, and the results so far are returned (the interrupted task's with
    ``status="cancelled"``; tasks not started are left out).

    ``tune_collector=True`` (for a script whose process is the eval's): freeze the objects
    alive when the eval starts and collect garbage less often while it runs, restoring
    the collector's settings after (``loopwright eval`` does this). With 1,000 samples in
    flight it makes a sixth more steps per CPU second (``bench/README.md``); by default
    the collector is left as it is.
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
    tuning = tuned_collector() if tune_collector else contextlib.nullcontext()
    try:
        with tuning:
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
                    shard=shard,
                    merge=merge,
                    backend=backend,
                    ray_address=ray_address,
                    ray_env=ray_env,
                    force=force,
                )
            )
    except KeyboardInterrupt:
        return done
