"""A sandbox whose start is cancelled (a time limit of an eval sample while its sandbox
starts, Ctrl-C) leaves nothing behind: not its host folder (with, as root, its quota
tmpfs mounted) nor its memory cgroup; a run's kept folder goes when the run ends on its
limit meanwhile."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.sandboxes import SandboxLimits, _bwrap, _local, use_sandbox
from loopwright.sandboxes._cgroup import MemoryGroup
from loopwright.sandboxes._folders import run_folder

from .conftest import BWRAP_PROBLEM, exists, host_read


@pytest.mark.parametrize("backend", ["bwrap", "local"])
@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_sandbox_cancelled_while_it_starts_leaves_nothing(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "bwrap" and BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    module: Any = _bwrap if backend == "bwrap" else _local
    groups: list[MemoryGroup | None] = []
    making, go_on = threading.Event(), threading.Event()
    real_group = module.memory_group

    def slow_group(limit: int, uid: int, gid: int) -> MemoryGroup | None:
        # the cancellation comes while the sandbox's folder is made and its cgroup is
        # being made (a thread the cancellation cannot stop)
        groups.append(real_group(limit, uid, gid))
        making.set()
        go_on.wait(30)
        return groups[-1]

    roots: list[str] = []
    maker = "_make_sandbox_root" if backend == "bwrap" else "_make_local_root"
    real_root = getattr(module, maker)

    def make_root(*args: Any) -> str:
        roots.append(real_root(*args))
        return roots[-1]

    monkeypatch.setattr(module, "memory_group", slow_group)
    monkeypatch.setattr(module, maker, make_root)

    async def start() -> None:
        async with use_sandbox(backend, limits=SandboxLimits(memory_total_bytes=64 << 20)):
            raise AssertionError("the start was cancelled: the block never runs")

    task = asyncio.ensure_future(start())
    assert await asyncio.to_thread(making.wait, 30)
    task.cancel()
    await asyncio.sleep(0.1)  # (the cancellation reaches the task while the thread runs)
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)
    assert len(roots) == 1 and len(groups) == 1
    assert not exists(roots[0]), "the sandbox's folder was left behind"
    group = groups[0]
    if group is not None:
        assert not exists(group.path), "the sandbox's memory cgroup was left behind"


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
async def test_a_probe_cancelled_while_it_starts_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the first sandbox of a host user probes bubblewrap in a sandbox folder of its own
    monkeypatch.setattr(_bwrap, "_probes", {})
    roots: list[str] = []
    making, go_on = threading.Event(), threading.Event()
    real_root = _bwrap._make_sandbox_root

    def slow_root(*args: Any) -> str:
        roots.append(real_root(*args))
        making.set()
        go_on.wait(30)
        return roots[-1]

    monkeypatch.setattr(_bwrap, "_make_sandbox_root", slow_root)
    task = asyncio.ensure_future(_bwrap.BwrapSandbox.create())
    assert await asyncio.to_thread(making.wait, 30)
    task.cancel()
    await asyncio.sleep(0.1)
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)
    assert len(roots) == 1 and not exists(roots[0]), "the probe's folder was left behind"


@pytest.mark.parametrize("backend", ["bwrap", "local"])
@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_run_whose_limit_ends_its_sandbox_start_leaves_no_folder(
    backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a run in a run store starts its sandbox in its run's folder, kept by its id for a
    # resume: a run that ended on its limit (here while its sandbox started) is finished
    # and has nothing to resume
    if backend == "bwrap" and BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    if backend == "local":  # (a bwrap sandbox's user must reach it: the default place)
        monkeypatch.setenv("LOOPWRIGHT_SANDBOXES", str(tmp_path / "boxes"))
    module: Any = _bwrap if backend == "bwrap" else _local
    maker = "_make_sandbox_root" if backend == "bwrap" else "_make_local_root"
    real_root, real_group = getattr(module, maker), module.memory_group
    roots: list[str] = []
    groups: list[MemoryGroup | None] = []
    making, go_on = threading.Event(), threading.Event()

    def slow_root(*args: Any) -> str:
        roots.append(real_root(*args))
        making.set()
        go_on.wait(30)  # (a thread: the run's time limit cannot stop it)
        return roots[-1]

    def group(*args: Any) -> MemoryGroup | None:
        groups.append(real_group(*args))
        return groups[-1]

    monkeypatch.setattr(module, maker, slow_root)
    monkeypatch.setattr(module, "memory_group", group)
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "x"})])
    db = tmp_path / "runs.db"
    run = lw.run(lw.react(), "go", model=model, db=db, sandbox=backend, limits=[lw.time_limit(0.2)])
    task = asyncio.ensure_future(run)
    assert await asyncio.to_thread(making.wait, 30)
    # the limit's timer (0.2 s after the run began, before its sandbox's folder was
    # made) is due before this sleep ends: the loop runs timers in order, so the limit
    # has fired when the folder's making goes on
    await asyncio.sleep(0.5)
    go_on.set()
    state = await asyncio.wait_for(task, 60)
    assert state.completed == "limit" and state.limit is not None
    assert state.limit.type == "time"
    assert roots == [str(run_folder(db, state.run_id))]
    assert not exists(roots[0]), "the run's sandbox folder was left behind"
    assert roots[0] not in host_read("/proc/self/mounts")  # (as root: its quota tmpfs)
    assert [i.status for i in lw.list_runs(db)] == ["limit"]
    for made in groups:
        assert made is None or not exists(made.path), "the sandbox's cgroup was left behind"
