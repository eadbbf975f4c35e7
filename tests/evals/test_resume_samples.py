"""An eval killed with kill -9 while several samples are in flight: resumed, each sample
goes on from its last recorded step."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw

from ._resume_spawn import spawn


def test_samples_in_flight_go_on_from_their_last_step(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    proc = spawn(db, side, hang=True)
    deadline = time.monotonic() + 120
    hung = {f"start q{i} 1" for i in range(3)}
    while not hung <= set(side.read_text().splitlines() if side.exists() else []):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    [first] = lw.list_runs(db)
    assert first.status == "interrupted"

    again = spawn(db, side, first.id)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    lines = side.read_text().splitlines()
    for q in ("q0", "q1", "q2"):
        # step 0 was recorded: not run again; step 1 was in flight: run again; the step
        # limit of 3 counted the killed run's steps, so no 4th step (the submit) was made
        assert [x for x in lines if x.startswith(f"start {q} ")] == [
            f"start {q} 0",
            f"start {q} 1",
            f"start {q} 1",
            f"start {q} 2",
        ]
        assert Counter(x for x in lines if x.startswith(f"end {q} ")) == Counter(
            f"end {q} {i}" for i in range(3)
        )
    second = next(r for r in lw.list_runs(db) if r.id != first.id)
    with lw.load_run(second.id, db) as log:
        samples = log.samples
        assert {s.id: s.status for s in samples} == {"s0": "limit", "s1": "limit", "s2": "limit"}
        for s in samples:
            assert s.metadata["continued_from"] == first.id
            events = list(log.events(s))
            assert isinstance(events[0], lw.InfoEvent) and events[0].source == "resume"
            # the step answered from the killed run is no model call: only step 2 is
            models = [e for e in events if isinstance(e, lw.ModelEvent)]
            assert len(models) == 1
            results = [m.content for m in log.messages(s) if isinstance(m, lw.ToolMessage)]
            assert results == ["did 0", "did 1", "did 2"]


@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_sample_in_flight_keeps_its_sandbox_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_SANDBOXES", str(tmp_path / "boxes"))
    db, hung = tmp_path / "runs.db", asyncio.Event()
    hang = [True]

    @lw.tool
    async def write(i: int) -> str:
        """Add a line to the notes and read them.

        Args:
            i: The line.
        """
        box = lw.sandbox()
        await box.exec(["sh", "-c", f"echo line {i} >> notes.txt"])
        if hang[0] and i == 1:
            hung.set()
            await asyncio.sleep(3600)
        return await box.read_file("notes.txt")

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done == 2:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "ok"})
        return lw.ModelOutput.for_tool_call("write", {"i": done})

    samples = [lw.Sample(input="Write.", target="ok", id="s0", files={"notes.txt": "given\n"})]
    task = lw.Task(
        samples, agent=lw.react(tools=[write]), scorer=lw.match(), sandbox="local", name="w"
    )
    model = lw.get_model("mock", outputs=respond)
    running = asyncio.create_task(lw.eval_async(task, model=model, db=db))
    await hung.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    [first] = lw.list_runs(db)
    hang[0] = False
    [result] = await lw.eval_async(task, model=model, db=db, resume=first.id)
    assert result.completed == 1 and result.samples[0].status == "success"
    with lw.load_run(result.run_id, db) as log:
        [sample] = log.samples
        tools = [m.content for m in log.messages(sample) if isinstance(m, lw.ToolMessage)]
    # the sample's files were not written again, and its own lines are there
    assert tools[1] == "given\nline 0\nline 1\nline 1\n"
    assert not any((tmp_path / "boxes").rglob("notes.txt"))  # finished: folders removed
