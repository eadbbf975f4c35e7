"""Evals on Ray: the samples of a task spread over the workers of a Ray cluster.

Ray is the engine (an optional extra, imported only here); the contract is the shard one
(``_shard.py``). The driver opens the eval's run as usual, deals the samples into
shards, and submits one Ray task per shard. Each Ray task runs its shard in a worker
process, many samples at once with asyncio (``max_samples`` applies per worker), with
its own sandboxes and its own run store: ``<db>-shards/<run id>/shard-I-of-N.db`` next
to the run store, so the workers must reach that folder (one machine, or a shared file
system on a cluster). The driver polls the shard stores and carries every sample that
finishes into its run as it finishes: one progress display for the whole eval, and the
eval is readable in the run store while it runs, with metrics over all samples at the
end.

A worker process that dies takes only its in-flight samples with it: Ray runs the
shard's task again (``max_retries``), and the shard's run store already holds what it
finished, which the new run carries over instead of running again. Secrets reach the
workers through the environment only: a local Ray started here inherits this process's
environment; otherwise, name the variables to forward (``ray_env=``, the CLI's
``--ray-env``), which go with each Ray task's ``runtime_env``, never through the run
store.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, MissingDependencyError
from ..log import RunStoreError, SampleInfo, default_db_path
from ..model import GenerateConfig, Model
from ..runtime import RunScope
from ._results import DONE, SampleResult
from ._runner import _TaskRun
from ._sample import Sample
from ._shard import Shard, latest_samples

__all__ = ["RayTaskRun", "ray_session"]

POLL_SECONDS = 0.25
MAX_RETRIES = 3


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            "evals on Ray need the ray package: pip install 'loopwright[ray]'"
        ) from None
    return ray


def forwarded_env(names: Sequence[str]) -> dict[str, str]:
    """The variables ``names`` of this environment, to send to the workers."""
    missing = [name for name in names if name not in os.environ]
    if missing:
        raise ConfigurationError(f"ray_env: not set in this environment: {', '.join(missing)}")
    return {name: os.environ[name] for name in names}


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[Any]:
    """Ray, connected: to ``address`` (``"auto"``, ``"ray://host:port"``...) or, for
    ``None`` / ``"local"``, to a local Ray started here (and stopped at the end); a Ray
    already connected in this process is used as it is."""
    ray = _ray()
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
        if address in (None, "local"):
            ray.init(**options)
        else:
            ray.init(address=address, **options)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _run_shard(
    spec: str,
    task_args: Mapping[str, Any] | None,
    task_name: str,
    model: str | None,
    config: GenerateConfig | None,
    options: dict[str, Any],
    shard: str,
    db: str,
) -> str:
    """A Ray task: run one shard of a task in this worker process, into ``db``."""
    from ._entry import _configured
    from ._follow import Quiet
    from ._runner import default_max_samples
    from ._task import load_tasks, on_sys_path

    async def go() -> str:
        [task] = [t for t in load_tasks(spec, task_args) if t.name == task_name]
        chosen = _configured(model if model is not None else task.model, config)
        runner = _TaskRun(
            task,
            model=chosen,
            max_samples=options["max_samples"] or default_max_samples(chosen),
            epochs=options["epochs"],
            limit=options["limit"],
            db=db,
            resume=None,
            progress=Quiet(),
            shard=Shard.parse(shard),
        )
        with on_sys_path(task._folder):
            result = await runner()
        return result.status

    return asyncio.run(go())


class RayTaskRun(_TaskRun):
    """A task's eval whose samples run on Ray workers (see the module's docstring)."""

    def __init__(
        self,
        *args: Any,
        ray: Any,
        spec: str,
        task_args: Mapping[str, Any] | None,
        model_name: str | None,
        config: GenerateConfig | None,
        requested_samples: int | None,
        env: Mapping[str, str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.env = dict(env)
        self._since: dict[Path, float] = {}  # per shard store: the latest finish seen
        self.ray, self.spec, self.task_args = ray, spec, task_args
        self.model_name, self.config, self.requested_samples = model_name, config, requested_samples

    def _folder(self, rec: RunScope) -> Path:
        if self.db is False:
            return Path(tempfile.mkdtemp(prefix="loopwright-ray-"))
        db = Path(self.db) if self.db is not None else default_db_path()
        return db.parent / f"{db.stem}-shards" / rec.run_id

    async def _work(self, rec: RunScope, pending: list[tuple[Sample, int]]) -> None:
        if not pending:
            return
        ray, task = self.ray, self.task
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, min(len(pending), 2 * workers))
        folder = self._folder(rec)
        folder.mkdir(parents=True, exist_ok=True)
        stores = {Shard(i, count): folder / f"shard-{i}-of-{count}.db" for i in range(1, count + 1)}
        placement: dict[str, Any] = {"max_retries": MAX_RETRIES, "num_cpus": 1}
        if self.env:  # per task: whoever started Ray, the workers get them
            placement["runtime_env"] = {"env_vars": self.env}
        remote = ray.remote(**placement)(_run_shard)
        options = {
            "max_samples": self.requested_samples,
            "epochs": self.epochs,
            "limit": self.limit,
        }
        refs = {
            remote.remote(
                self.spec,
                dict(self.task_args) if self.task_args else None,
                task.name,
                self.model_name,
                self.config,
                options,
                str(shard),
                str(path),
            ): shard
            for shard, path in stores.items()
        }
        wanted = {(str(s.id), e): (s, e) for s, e in pending}
        failures: dict[Shard, str] = {}
        try:
            while refs:
                done, _ = await asyncio.to_thread(
                    ray.wait, list(refs), num_returns=len(refs), timeout=POLL_SECONDS
                )
                for ref in done:
                    shard = refs.pop(ref)
                    try:
                        await asyncio.to_thread(ray.get, ref)
                    except Exception as ex:  # the shard's task failed after its retries
                        failures[shard] = f"{type(ex).__name__}: {str(ex)[:2000]}"
                await self._collect(rec, stores, wanted, finished_only=True)
            await self._collect(rec, stores, wanted, finished_only=False)
            for (sid, epoch), (sample, _) in list(wanted.items()):
                owner = next(s for s in stores if s.select(task.name, [(sid, epoch)]))
                why = failures.get(owner, "its shard ended without recording it")
                await self._record_lost(rec, sample, epoch, f"lost on Ray (shard {owner}): {why}")
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)
            if self.db is False:
                shutil.rmtree(folder, ignore_errors=True)

    async def _collect(
        self,
        rec: RunScope,
        stores: Mapping[Shard, Path],
        wanted: dict[tuple[str, int], tuple[Sample, int]],
        *,
        finished_only: bool,
    ) -> None:
        """Carry the samples the shards have recorded since the last look."""
        task = self.task
        scored = bool(task.scorer)
        for shard, path in stores.items():
            if not path.exists():
                continue
            # only what finished since the last look (from 1 ms before it: stamps are
            # rounded to the microsecond; what was seen already is no longer wanted)
            last = self._since.get(path)
            since = None if last is None else last - 0.001
            try:
                found = await asyncio.to_thread(
                    latest_samples,
                    [path],
                    task=task.name,
                    params=task.params,
                    shard=shard,
                    since=since,
                )
            except RunStoreError:
                if not finished_only:
                    raise
                continue  # a worker is creating the store: look again next time
            for key, (info, source) in found.items():
                if info.finished is not None:
                    stamp = info.finished.timestamp()
                    self._since[path] = max(self._since.get(path, stamp), stamp)
                if key not in wanted:
                    continue
                # done, or waiting for approval (its shard's run ended it so): as it is
                finished = (info.status in DONE and (info.scores is not None or not scored)) or (
                    info.status == "waiting"
                )
                if finished:
                    await self._carry(rec, info, source, mark="ran_in")
                elif finished_only:
                    continue
                else:
                    await self._carry_failed(rec, info, source)
                del wanted[key]
                self.result.samples[-1].resumed = False
                self.progress.sample_finished(self.result.samples[-1])

    async def _carry_failed(self, rec: RunScope, info: SampleInfo, source: str) -> None:
        async with rec.sample(
            info.id,
            epoch=info.epoch,
            input=info.input,
            target=info.target,
            metadata={**info.metadata, "ran_in": source},
        ) as srec:
            srec.finish(output=info.output, status="error", error=info.error or info.status)
        self.result.samples.append(
            SampleResult(id=info.id, epoch=info.epoch, status="error", error=info.error)
        )

    async def _record_lost(self, rec: RunScope, sample: Sample, epoch: int, why: str) -> None:
        async with rec.sample(
            str(sample.id), epoch=epoch, input=sample.input, target=sample.target
        ) as srec:
            srec.finish(status="error", error=why)
        self.result.samples.append(
            SampleResult(id=str(sample.id), epoch=epoch, status="error", error=why)
        )
        self.progress.sample_finished(self.result.samples[-1])


def ray_options(
    tasks: Any,
    model: str | Model | None,
    config: GenerateConfig | None,
    task_args: Mapping[str, Any] | None,
    max_samples: int | None,
    resume: str | None,
    shard: Any,
) -> dict[str, Any]:
    """What :class:`RayTaskRun` needs beyond a task's runner, checked: the task by file
    or name (the workers build it), the model by name, no ``resume``/``shard``."""
    specs = [tasks] if not isinstance(tasks, list | tuple) else list(tasks)
    if len(specs) != 1 or not isinstance(specs[0], str):
        raise ConfigurationError(
            "evals on Ray take one task file or name (FILE.py, FILE.py@task, a registered "
            "name): the workers build the tasks from it"
        )
    if resume is not None or shard is not None:
        raise ConfigurationError("evals on Ray do not take resume= or shard= (yet)")
    return {
        "spec": specs[0],
        "task_args": task_args,
        "model_name": model_name(model),
        "config": config,
        "requested_samples": max_samples,
    }


def model_name(model: str | Model | None) -> str | None:
    """The model as Ray workers get it: by name (a Model object is not sent)."""
    if model is None or isinstance(model, str):
        return model
    raise ConfigurationError(
        "evals on Ray take the model by name (model='openai/gpt-4o-mini'), or the task's "
        "own: a Model object is not sent to the workers"
    )
