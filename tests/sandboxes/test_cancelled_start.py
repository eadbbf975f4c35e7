"""A sandbox whose start is cancelled (a time limit of an eval sample while its sandbox
starts, Ctrl-C) leaves nothing behind: not its host folder (with, as root, its quota
tmpfs mounted) nor its memory cgroup."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from loopwright.sandboxes import SandboxLimits, _bwrap, _local, use_sandbox
from loopwright.sandboxes._cgroup import MemoryGroup

from .conftest import BWRAP_PROBLEM, exists


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
