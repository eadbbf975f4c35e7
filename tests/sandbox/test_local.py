"""The local backend: no isolation, but the same limits and cleanup (real processes)."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid

import pytest

from loopwright.sandbox import ExecTimeoutError, SandboxLimits, use_sandbox
from loopwright.sandbox._local import LocalSandbox

from .conftest import exists, gone, live_processes, wait_for_process


async def test_local_says_it_is_unisolated(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopwright.sandbox"):
        async with use_sandbox("local") as sb:
            assert not sb.isolated and sb.name == "local"
            root = sb.workdir
    assert "WITHOUT isolation" in caplog.text
    assert not exists(root)


async def test_runs_in_a_private_folder_with_a_clean_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_TEST_SECRET", "hunter2")
    async with use_sandbox("local") as sb:
        r = await sb.exec(["sh", "-c", "pwd; env"], env={"EXTRA": "yes"})
        lines = r.stdout.splitlines()
        assert lines[0] == sb.workdir
        assert "hunter2" not in r.stdout
        assert "EXTRA=yes" in lines
        await sb.write_file("sub/f.txt", "text")
        assert (await sb.exec(["cat", "sub/f.txt"])).stdout == "text"
        assert await sb.read_file("sub/f.txt") == "text"
        py = await sb.exec([sb.python, "-c", "print(2 + 2)"])
        assert py.stdout == "4\n"
        with pytest.raises(FileNotFoundError):
            await sb.read_file("nope")


async def test_timeout_kills_the_whole_tree() -> None:
    marker = uuid.uuid4().hex
    async with use_sandbox("local") as sb:
        # a child in the background and a grandchild: all must die
        script = f"sleep 300 & python3 -c 'import time; time.sleep(300)' {marker} & wait"
        task = asyncio.ensure_future(sb.exec(["sh", "-c", script], timeout=2))
        child = await wait_for_process(marker, "python3")
        with pytest.raises(ExecTimeoutError):
            await task
    await asyncio.sleep(0.2)
    assert gone(child)
    assert live_processes(marker) == []


async def test_leftover_background_processes_are_killed_after_the_command() -> None:
    marker = uuid.uuid4().hex
    async with use_sandbox("local") as sb:
        r = await sb.exec(
            ["sh", "-c", f"python3 -c 'import time; time.sleep(300)' {marker} >/dev/null & echo ok"]
        )
        assert r.stdout == "ok\n"
    await asyncio.sleep(0.2)
    assert live_processes(marker) == []


async def test_limits_apply_locally() -> None:
    limits = SandboxLimits(max_output_bytes=10_000, memory_bytes=512 * 1024 * 1024)
    sb = await LocalSandbox.create(limits=limits)
    try:
        r = await sb.exec(["yes"], timeout=60)
        assert r.truncated and len(r.stdout) == 10_000
        mem = await sb.exec([sb.python, "-c", "b = bytearray(2 * 1024**3)"])
        assert not mem.success and "MemoryError" in mem.stderr
        data = os.urandom(5 * 1024 * 1024)
        wc = await sb.exec(["wc", "-c"], input=data)
        assert wc.stdout.strip() == str(len(data))
    finally:
        await sb.cleanup()
