"""A run store that fails mid-run (the disk is full) stops the run at once, keeps what was
recorded readable, and hands the state back with the error."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import _file_thread

from ._full import cap_pages


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 384 KiB filesystem (tmpfs), so SQLite meets a real ENOSPC."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


STEPS = 300
calls: list[int] = []


@lw.tool
async def write_chunk(i: int) -> str:
    """Write a chunk.

    Args:
        i: Which one.
    """
    calls.append(i)
    await asyncio.sleep(0.001)  # a real tool awaits something: the run can be stopped there
    if i == 2:  # the first steps are surely in the file before it fills
        rec = lw.current_recording()
        assert rec is not None
        await rec.flush()
    return f"chunk {i} " + "x" * 16_000  # ~16 kB a step: the disk fills in a few dozen


def script() -> list[lw.ModelOutput | str]:
    outputs: list[lw.ModelOutput | str] = [
        lw.ModelOutput.for_tool_call("write_chunk", {"i": i}) for i in range(STEPS)
    ]
    return [*outputs, "done"]


async def test_a_full_disk_stops_the_run_within_a_step_and_returns_its_state(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = small_disk / "runs.db"
    calls.clear()
    failed_at: list[int] = []  # how many calls had run when the writer's thread failed
    real_fail = _file_thread._FileWriter._fail

    def fail(self: _file_thread._FileWriter, error: BaseException) -> None:
        failed_at.append(len(calls))
        real_fail(self, error)

    monkeypatch.setattr(_file_thread._FileWriter, "_fail", fail)
    model = lw.get_model("mock", outputs=script())
    agent = lw.react(tools=[write_chunk], submit=False, max_steps=STEPS + 5)
    t0 = time.monotonic()
    with pytest.raises(lw.RunStoreError) as caught:
        await lw.run(agent, "write", model=model, db=db)
    assert time.monotonic() - t0 < 20
    error = caught.value
    message = str(error)
    assert "\n" not in message and str(db) in message
    assert "full" in message, message
    # stopped promptly: a handful of calls, not the 300 the model asked for
    assert 3 < len(calls) < STEPS // 2, len(calls)
    # the state so far comes with the error
    state = error.state
    assert isinstance(state, lw.AgentState)
    assert any(isinstance(m, lw.ToolMessage) for m in state.messages)
    assert state.error == message
    # what was recorded before the failure stays readable
    (info,) = lw.list_runs(db)
    with lw.load_run(info.id, db=db) as log:
        recorded = [e for e in log.events() if isinstance(e, lw.ToolEvent) and not e.pending]
    assert [e.arguments["i"] for e in recorded][:2] == [0, 1]
    # the run stopped within a step or two of the writer's failure
    assert failed_at and len(calls) - failed_at[0] <= 2, (len(calls), failed_at)
    # the store's thread let go of the file
    assert not any(f.path == db for f in _file_thread._files.values())


async def test_the_writer_thread_failing_stops_a_run_within_milliseconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any failure of the writer's thread (here SQLite's own SQLITE_FULL, with a page cap
    on its connection) reaches the run at once, even while it waits on a slow tool."""
    cap_pages(monkeypatch)

    @lw.tool
    async def slow(i: int) -> str:
        """Wait a while.

        Args:
            i: Which one.
        """
        if i == 1:
            await asyncio.sleep(30)  # the failure must not wait for this
        return "y" * 20_000

    outputs: list[lw.ModelOutput | str] = [
        lw.ModelOutput.for_tool_call("slow", {"i": i}) for i in range(5)
    ]
    model = lw.get_model("mock", outputs=[*outputs, "done"])
    t0 = time.monotonic()
    with pytest.raises(lw.RunStoreError, match="full") as caught:
        await lw.run(lw.react(tools=[slow], submit=False), "go", model=model, db=tmp_path / "r.db")
    assert time.monotonic() - t0 < 10
    assert isinstance(caught.value.state, lw.AgentState)
    # the file is fine: the run's end was recorded afterwards, through a fresh connection
    (info,) = lw.list_runs(tmp_path / "r.db")
    assert info.status == "error" and "full" in (info.error or "")


async def test_a_failure_after_the_last_step_still_hands_back_the_state(tmp_path: Path) -> None:
    """A run that finishes before the failure reaches it raises the error, with its final
    state (not a bare error at the end that throws the result away)."""
    db = tmp_path / "r.db"

    @lw.tool
    def breaks_the_store() -> str:
        """Break the run store."""
        # what the writer's thread does when a write fails, at the very end of a run
        rec = lw.current_recording()
        assert rec is not None and rec._recorder is not None and rec._recorder.writer is not None
        rec._recorder.writer._file._fail(OSError(28, "No space left on device"))
        return "ok"

    model = lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("breaks_the_store", {}), "the answer"]
    )
    with pytest.raises(lw.RunStoreError, match="No space left") as caught:
        await lw.run(lw.react(tools=[breaks_the_store], submit=False), "go", model=model, db=db)
    state = caught.value.state
    assert isinstance(state, lw.AgentState)


async def test_an_eval_whose_store_fills_stops_and_says_so(small_disk: Path) -> None:
    answered: list[str] = []

    async def model(messages: object, tools: object, config: object) -> str:
        answered.append("x")
        # a model call takes a moment: the writer's thread, which learns of the full disk,
        # gets its turns (runs that finish faster than it writes are not held back: the
        # writer has no backpressure, so the stop comes within its latency, not in steps)
        await asyncio.sleep(0.02)
        return "The answer is 4. " + "y" * 16_000

    data = [{"id": f"s{i}", "input": "2+2", "target": "4"} for i in range(300)]
    task = lw.Task(data, agent=lw.react(submit=False), name="fill", scorer=lw.match("numeric"))
    t0 = time.monotonic()
    [result] = await lw.eval_async(
        task, model=lw.get_model("mock", outputs=model), db=small_disk / "runs.db", max_samples=4
    )
    assert time.monotonic() - t0 < 30
    assert result.status == "error"
    assert result.error is not None and "full" in result.error and "\n" not in result.error
    assert len(answered) < 150, len(answered)
    assert lw.list_runs(small_disk / "runs.db")  # what was recorded is readable
