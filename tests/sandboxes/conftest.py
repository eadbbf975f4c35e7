"""Shared fixtures of the sandbox tests: a real bwrap sandbox, or a clear skip."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import psutil
import pytest

from loopwright.sandboxes import SandboxUnavailableError
from loopwright.sandboxes._bwrap import BwrapSandbox


def _bwrap_problem() -> str | None:
    async def probe() -> None:
        sb = await BwrapSandbox.create()
        await sb.cleanup()

    try:
        asyncio.run(probe())
    except SandboxUnavailableError as e:
        return str(e)
    return None


BWRAP_PROBLEM = _bwrap_problem()
needs_bwrap = pytest.mark.skipif(
    BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
)


@pytest.fixture
async def sb() -> AsyncIterator[BwrapSandbox]:
    """A fresh bwrap sandbox (not installed as ``sandbox()``), cleaned up after."""
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    env = await BwrapSandbox.create()
    try:
        yield env
    finally:
        await env.cleanup()


def live_processes(marker: str) -> list[psutil.Process]:
    """Host processes (zombies aside) whose command line contains ``marker``."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            continue
    return found


async def wait_for_process(marker: str, name: str, timeout: float = 20.0) -> psutil.Process:
    """The host process named ``name`` whose command line contains ``marker``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in live_processes(marker):
            try:
                if p.name() == name:
                    return p
            except psutil.Error:
                continue
        await asyncio.sleep(0.05)
    raise AssertionError(f"no process {name!r} with {marker!r} appeared")


def gone(p: psutil.Process) -> bool:
    """Whether ``p`` no longer runs (reaped, or a zombie waiting for its reaper)."""
    try:
        return p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def exists(path: str) -> bool:
    """Whether ``path`` exists on the host (a sync helper for async tests)."""
    return os.path.lexists(path)


def host_stat(path: str) -> os.stat_result:
    """``os.stat`` on the host (a sync helper for async tests)."""
    return os.stat(path)


def host_read(path: str) -> str:
    """A host file's text (a sync helper for async tests)."""
    with open(path, encoding="utf-8") as f:
        return f.read()
