"""The local backend: no isolation, but the same limits and cleanup (real processes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.sandboxes import ExecTimeoutError, SandboxError, SandboxLimits, use_sandbox
from loopwright.sandboxes._local import LocalSandbox

from .conftest import exists, gone, live_processes, wait_for_process


async def test_local_says_it_is_unisolated(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopwright.sandboxes"):
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


async def test_a_model_mistake_in_a_file_or_command_is_an_error_for_the_model() -> None:
    from loopwright.tools.builtin import bash, files

    tools = [bash(), files()]

    async def call(name: str, **args: object) -> lw.ToolMessage:
        message = lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)])
        [result] = await lw.execute_tools(message, tools)
        return result

    async with use_sandbox("local"):
        await call("files", action="write", path="f.txt", content="x")
        # a parent that is a file, a NUL byte: the run goes on, the model reads why
        for name, args in (
            ("files", {"action": "read", "path": "f.txt/x"}),
            ("files", {"action": "write", "path": "f.txt/x", "content": "y"}),
            ("bash", {"cmd": "echo a\x00b"}),
        ):
            result = await call(name, **args)
            assert result.error is not None, (name, result.text)
            assert "Errno" not in result.text


async def test_local_file_size_limits_apply_to_reads_and_writes() -> None:
    sb = await LocalSandbox.create(limits=SandboxLimits(max_file_bytes=100))
    try:
        with pytest.raises(SandboxError, match="file size limit"):
            await sb.write_file("big.txt", "x" * 101)
        made = Path(sb.workdir, "made.bin")  # written from the host, past the limit
        await asyncio.to_thread(made.write_bytes, b"\0" * 200)
        with pytest.raises(SandboxError, match="file size limit"):
            await sb.read_file("made.bin", text=False)
        with pytest.raises(lw.ConfigurationError, match="timeout must be positive and finite"):
            await sb.exec(["true"], timeout=float("nan"))
        with pytest.raises(lw.ConfigurationError, match="environment variable"):
            await sb.exec(["true"], env={"A": "x\x00y"})
    finally:
        await sb.cleanup()


async def test_a_file_swapped_for_a_fifo_while_it_is_written_does_not_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a command running beside write_file (parallel tool calls) swaps the file for a
    # FIFO between the check and the open: opening a FIFO to write waits for a reader,
    # forever, in a thread no cancellation stops. (Played here by the check itself.)
    sb = await LocalSandbox.create()
    target = os.path.join(sb.workdir, "swapped")
    real_stat = os.stat

    def stat_then_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        result = real_stat(path, *args, **kwargs)
        if path == target and not os.path.exists(target + ".swapped"):
            os.unlink(target)
            os.mkfifo(target)
            os.mkdir(target + ".swapped")
        return result

    try:
        await sb.write_file("swapped", "before")
        monkeypatch.setattr(os, "stat", stat_then_swap)
        try:
            await asyncio.wait_for(sb.write_file("swapped", "after"), 20)
            outcome = "written"
        except SandboxError as e:
            outcome = str(e)
        except TimeoutError:
            # let the stuck writer go (else the event loop's executor waits for it)
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
            await asyncio.sleep(1)
            os.close(fd)
            raise AssertionError("write_file hung on a FIFO") from None
        assert outcome == "written" or "not a regular file" in outcome, outcome
    finally:
        monkeypatch.undo()
        await sb.cleanup()


def test_a_bad_max_sandboxes_setting_names_the_variable() -> None:
    import subprocess
    import sys

    probe = "import loopwright.sandboxes._context"
    env = {**os.environ, "LOOPWRIGHT_MAX_SANDBOXES": "abc"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "LOOPWRIGHT_MAX_SANDBOXES" in done.stderr


def test_the_unisolated_warning_reaches_python_users(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from loopwright.sandboxes import UnisolatedSandboxWarning, _local

    async def twice() -> None:
        for _ in range(2):
            async with use_sandbox("local"):
                pass

    monkeypatch.setattr(_local, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # what a plain `python script.py` shows
        asyncio.run(twice())
    shown = [w for w in caught if issubclass(w.category, UnisolatedSandboxWarning)]
    assert len(shown) == 1  # once per process
    assert "WITHOUT isolation" in str(shown[0].message)


@pytest.mark.parametrize("timeout", [None, 1.0])
async def test_a_daemon_does_not_outlive_its_command(timeout: float | None) -> None:
    marker = str(uuid.uuid4().int % 10**8 + 10**8)
    # fork, leave the session (setsid), fork again: neither in the group nor the tree
    daemon = f"setsid -f sleep {marker} </dev/null >/dev/null 2>&1"
    async with use_sandbox("local") as sb:
        if timeout is None:
            assert (await sb.exec(["sh", "-c", daemon])).success
        else:
            with pytest.raises(ExecTimeoutError):
                await sb.exec(["sh", "-c", f"{daemon}; sleep 30"], timeout=timeout)
        for _ in range(100):
            if not live_processes(marker):
                break
            await asyncio.sleep(0.05)
        assert live_processes(marker) == []


async def test_a_daemon_started_in_the_background_dies_at_cleanup() -> None:
    marker = str(uuid.uuid4().int % 10**8 + 10**8)
    async with use_sandbox("local") as sb:
        task = asyncio.create_task(
            sb.exec(["sh", "-c", f"setsid -f sleep {marker} >/dev/null 2>&1; sleep 30"])
        )
        p = await wait_for_process(marker, "sleep")
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    for _ in range(100):  # (SIGKILL is delivered asynchronously)
        if gone(p):
            break
        await asyncio.sleep(0.05)
    assert gone(p)


def test_the_tools_do_not_promise_isolation_or_no_network() -> None:
    from loopwright.tools.builtin import bash, python

    for t in (bash(), python()):
        text = t.info.description.lower()
        assert "no network" not in text and "sandboxed linux machine" not in text


def test_the_unisolated_warning_names_the_users_line_through_run_sync(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # run_sync makes the sandbox inside a task: asyncio's frames are not the user's line
    import warnings

    from loopwright.sandboxes import UnisolatedSandboxWarning, _local

    monkeypatch.setattr(_local, "_warned", False)
    agent = lw.react(tools=[lw.bash()], submit=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        lw.run_sync(agent, "hi", model="mock", db=False, sandbox="local")  # this line
    shown = [w for w in caught if issubclass(w.category, UnisolatedSandboxWarning)]
    assert len(shown) == 1
    assert shown[0].filename == __file__, shown[0].filename
