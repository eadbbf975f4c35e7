"""Rollouts: one agent over many inputs, the final states collected, here or on Ray.

For bulk runs (training data, sweeps) that keep only their final states. Locally, the
inputs run ``max_concurrency`` at a time in this process. On Ray (``backend="ray"``),
they are cut into batches, one Ray task each; a batch runs in a worker process, its
inputs ``max_concurrency`` at a time, and a batch whose worker dies is run again on
another (``max_retries``). The states come back in the order of the inputs. A run that
fails is an :class:`AgentState` with its error in ``state.error`` (the others go on),
so one bad input never loses the rest. A run that did not finish says how, here and on
Ray alike: ``state.completed == "stopped"`` (a hook raised ``lw.StopRun``; its reason in
``state.error``), ``"waiting"`` (the ``approval`` policy deferred calls: ``state.pending``;
with ``db`` a path the run waits in the run store, for ``lw.approve`` and ``lw.resume``),
``"limit"``; a failed one has ``state.completed`` ``None``.

On Ray the agent travels by pickling (Ray's cloudpickle), and the model goes by name:
an agent holding API clients or keys is refused by Ray's pickling, or would carry the
key, so name the model and send keys with ``ray_env`` (environment variables).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigurationError, error_text
from ..agents import Agent, AgentState
from ..limits import Limit
from ..runtime import run
from ._task import fresh_limits

if TYPE_CHECKING:
    from ..tools import Approver

__all__ = ["rollouts", "rollouts_async"]

Input = str | AgentState


async def _one(agent: Agent, input: Input, options: dict[str, Any]) -> AgentState:
    limits = fresh_limits(options.get("limits", ()))
    try:
        return await run(agent, input, **{**options, "limits": limits})
    except asyncio.CancelledError as ex:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        # raised by the run's code, nobody cancelled it: this rollout failed (else the
        # gather would end and lose every other)
        return _failed(input, f"the run raised {error_text(ex)} uncancelled")
    except Exception as ex:  # one failed rollout does not lose the others
        return _failed(input, error_text(ex))


def _failed(input: Input, error: str) -> AgentState:
    state = input if isinstance(input, AgentState) else AgentState()
    state.error = error
    return state


async def _batch(
    agent: Agent, inputs: Sequence[Input], max_concurrency: int, options: dict[str, Any]
) -> list[AgentState]:
    slots = asyncio.Semaphore(max_concurrency)

    async def one(item: Input) -> AgentState:
        async with slots:
            return await _one(agent, item, options)

    return list(await asyncio.gather(*(one(item) for item in inputs)))


def _ray_batch(
    agent: Agent, inputs: list[Input], max_concurrency: int, options: dict[str, Any]
) -> list[AgentState]:
    """A Ray task: one batch in this worker process."""
    return asyncio.run(_batch(agent, inputs, max_concurrency, options))


async def rollouts_async(
    agent: Agent,
    inputs: Sequence[Input],
    *,
    model: str | None = None,
    limits: Sequence[Limit] = (),
    max_concurrency: int = 10,
    sandbox: str | None = None,
    db: Literal[False] | str = False,
    approval: str | Approver | Sequence[Any] | None = None,
    backend: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_env: Sequence[str] = (),
    batch_size: int | None = None,
) -> list[AgentState]:
    """Run ``agent`` on each of ``inputs``; the final states, in the inputs' order.

    Args:
        agent: The agent.
        inputs: Each a task (a string) or a state to continue.
        model: The model by name (default: the default model).
        limits: Limits for each run (each run gets new limits like these).
        max_concurrency: Runs at once (per worker process on Ray).
        sandbox: A sandbox backend for each run (``"bwrap"``, ``"local"``).
        db: ``False`` (default): keep only the states; a path: record each run there.
        approval: An approval policy for each run's tool calls, as ``run(approval=)``
            takes it (on Ray: by name, ``"defer"``, ``"ci"``...); a run whose calls it
            defers comes back ``waiting``.
        backend: ``"local"`` (this process) or ``"ray"``.
        ray_address: The Ray cluster (default: a local Ray started for this call).
        ray_env: Names of environment variables (API keys...) sent to the workers.
        batch_size: Inputs per Ray task (default: spread over twice the workers' CPUs).
    """
    if max_concurrency < 1:
        raise ConfigurationError(f"max_concurrency must be at least 1, got {max_concurrency}")
    if model is not None and not isinstance(model, str):
        raise ConfigurationError("rollouts take the model by name (model='mock', ...)")
    options: dict[str, Any] = {"model": model, "sandbox": sandbox, "db": db}
    if approval is not None:
        options["approval"] = approval
    if limits:
        options["limits"] = list(limits)
    items = list(inputs)
    if backend == "local":
        return await _batch(agent, items, max_concurrency, options)
    if backend != "ray":
        raise ConfigurationError(f"backend must be 'local' or 'ray', not {backend!r}")
    if approval is not None and not isinstance(approval, str):
        raise ConfigurationError(
            "rollouts on Ray take the approval policy by name (approval='defer', 'ci'...): "
            "a policy object is not sent to the workers"
        )
    from ._ray import MAX_RETRIES, forwarded_env, ray_session

    env = forwarded_env(ray_env)
    with ray_session(ray_address) as ray:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = batch_size or max(1, -(-len(items) // (2 * workers)))
        placement: dict[str, Any] = {"max_retries": MAX_RETRIES, "num_cpus": 1}
        if env:
            placement["runtime_env"] = {"env_vars": env}
        remote = ray.remote(**placement)(_ray_batch)
        shared = ray.put(agent)
        refs = [
            remote.remote(shared, items[i : i + size], max_concurrency, options)
            for i in range(0, len(items), size)
        ]
        batches = await asyncio.gather(*(asyncio.to_thread(ray.get, ref) for ref in refs))
    return [state for batch in batches for state in batch]


def rollouts(agent: Agent, inputs: Sequence[Input], **options: Any) -> list[AgentState]:
    """:func:`rollouts_async` for scripts (not inside a running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(rollouts_async(agent, inputs, **options))
    raise ConfigurationError("rollouts() called inside a running event loop; use rollouts_async()")
