"""A sample's time limit counts its wait for a free sandbox slot (and can end it)."""

from __future__ import annotations

import asyncio
import time

import pytest

import loopwright as lw
from loopwright.sandboxes import _context, set_max_sandboxes, use_sandbox


async def test_the_wait_for_a_sandbox_slot_counts_against_a_samples_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_context, "_max", _context._max)
    monkeypatch.setattr(_context, "_slots", type(_context._slots)())
    set_max_sandboxes(1)
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "x"})])
    samples = [lw.Sample(input="go", target="x", files={"in.txt": "hello"})]
    task = lw.Task(
        samples, agent=lw.react(), scorer=lw.match(), sandbox="local", limits=[lw.time_limit(0.5)]
    )
    release = asyncio.Event()

    async def hold() -> None:
        async with use_sandbox("local"):
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.1)  # it has the only slot
    # (the holder lets go after 10 s at the latest: a sample waiting outside its limit
    # then runs and answers)
    asyncio.get_running_loop().call_later(10, release.set)
    started = time.monotonic()
    try:
        [result] = await lw.eval_async(task, model=model, db=False)
    finally:
        release.set()
        await holder
    assert time.monotonic() - started < 5  # ended by its 0.5 s limit, not the holder
    [sample] = result.samples
    assert sample.status == "limit", sample.error
    assert sample.limit is not None and sample.limit.type == "time"
    assert result.limits == 1 and result.errors == 0


async def test_sample_files_are_in_the_sandbox_the_agent_sees() -> None:
    async def reader(state: lw.AgentState) -> lw.AgentState:
        text = await lw.sandbox().read_file("data/in.txt")
        state.output = lw.ModelOutput.from_text(text.strip())
        return state

    samples = [
        lw.Sample(input="read", target=f"file {i}", files={"data/in.txt": f"file {i}"})
        for i in range(3)
    ]
    task = lw.Task(samples, agent=reader, scorer=lw.match("exact"), sandbox="local")
    [result] = await lw.eval_async(task, db=False, model="mock", max_samples=3)
    assert [s.status for s in result.samples] == ["success"] * 3
    assert result.metrics["match"]["accuracy"] == 1.0
