"""A bwrap sandbox's processes share one memory cap (a memory cgroup of its own)."""

from __future__ import annotations

import os

import pytest

from loopwright.sandboxes import SandboxLimits
from loopwright.sandboxes._bwrap import BwrapSandbox
from loopwright.sandboxes._cgroup import memory_group

from .conftest import BWRAP_PROBLEM

MiB = 1024 * 1024

# four processes, each holding 100 MiB it has written to (so the pages are real)
HOG = """
import os, time
pids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(100 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1)
        os._exit(0)
    pids.append(pid)
codes = [os.waitpid(p, 0)[1] for p in pids]
print("killed" if any(codes) else "all held")
"""

ONE = """
block = bytearray(100 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
print("held")
"""


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _cgroup_or_skip() -> None:
    group = memory_group(64 * MiB, os.getuid(), os.getgid())
    if group is None:
        pytest.skip("no memory cgroup can be made on this machine")
    group.remove()


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
async def test_processes_of_a_sandbox_share_its_memory_cap() -> None:
    _cgroup_or_skip()
    limits = SandboxLimits(memory_total_bytes=250 * MiB, memory_bytes=1024 * MiB, timeout=60)
    sb = await BwrapSandbox.create(limits=limits)
    try:
        assert sb.memory is not None
        group = sb.memory.path
        one = await sb.exec(["python3", "-c", ONE])
        assert one.success and one.stdout.strip() == "held"  # one process fits
        hog = await sb.exec(["python3", "-c", HOG])
        # 4 x 100 MiB is within memory_bytes per process, but not within the total
        assert hog.stdout.strip() == "killed" or not hog.success, hog
        peak = sb.memory.peak_bytes()
        assert peak is not None and peak <= 260 * MiB
    finally:
        await sb.cleanup()
    assert not _exists(group)  # the cgroup goes with the sandbox


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
async def test_without_the_cap_the_same_command_holds_it_all() -> None:
    _cgroup_or_skip()
    limits = SandboxLimits(memory_total_bytes=None, memory_bytes=1024 * MiB, timeout=60)
    sb = await BwrapSandbox.create(limits=limits)
    try:
        assert sb.memory is None
        hog = await sb.exec(["python3", "-c", HOG])
        assert hog.success and hog.stdout.strip() == "all held", hog
    finally:
        await sb.cleanup()


def test_groups_of_a_process_that_is_gone_are_swept() -> None:
    _cgroup_or_skip()
    from loopwright.sandboxes import _cgroup

    found = _cgroup._parent()
    assert found is not None
    parent, _ = found
    dead = os.path.join(parent, f"{_cgroup._PREFIX}999999999-1")  # no such pid
    os.mkdir(dead)
    try:
        _cgroup._swept.discard(parent)
        group = memory_group(64 * MiB, os.getuid(), os.getgid())
        assert group is not None
        group.remove()
        assert not os.path.exists(dead)
    finally:
        if os.path.exists(dead):
            os.rmdir(dead)


async def test_the_local_backend_has_the_same_cap() -> None:
    import warnings

    from loopwright.sandboxes._local import LocalSandbox

    _cgroup_or_skip()
    limits = SandboxLimits(memory_total_bytes=250 * MiB, memory_bytes=1024 * MiB, timeout=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = await LocalSandbox.create(limits=limits)
    try:
        assert sb.memory is not None
        hog = await sb.exec(["python3", "-c", HOG])
        assert hog.stdout.strip() == "killed" or not hog.success, hog
    finally:
        await sb.cleanup()
