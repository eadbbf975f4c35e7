"""A run's time limit counts the wait for a free sandbox slot (and can end it)."""

from __future__ import annotations

import asyncio
import time

import pytest

import loopwright as lw
from loopwright.sandboxes import _context, set_max_sandboxes, use_sandbox


async def test_the_wait_for_a_sandbox_slot_counts_against_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_context, "_max", _context._max)
    monkeypatch.setattr(_context, "_slots", type(_context._slots)())
    set_max_sandboxes(1)
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "x"})])
    agent = lw.react(tools=[])
    release = asyncio.Event()

    async def hold() -> None:
        async with use_sandbox("local"):
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.1)  # it has the only slot
    started = time.monotonic()
    try:
        state = await lw.run(agent, "go", model=model, sandbox="local", limits=[lw.time_limit(0.5)])
    finally:
        release.set()
        await holder
    assert time.monotonic() - started < 5  # (it waited for the slot, past the limit)
    assert state.completed == "limit" and state.limit is not None
    assert state.limit.type == "time"
