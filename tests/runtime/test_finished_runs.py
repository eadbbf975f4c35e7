"""Finished runs leave nothing behind: once a run is over, its transcript and store are
freed, whatever timers it made (a deadline per model call, a time limit, a tool timeout:
a cancelled timer used to hold the run's context in the event loop's queue)."""

from __future__ import annotations

import gc
import weakref

import loopwright as lw
from loopwright.transcripts import on_transcript_open


@lw.tool(timeout=60)
async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second.
    """
    return a + b


async def test_a_thousand_finished_agents_leave_nothing_behind() -> None:
    """Each run has a deadline per model call, a time limit and a tool timeout: three
    kinds of timer. Once the runs are over, none of their transcripts or stores is alive
    (the final states, which the caller keeps, hold neither)."""
    agent = lw.react(tools=[add], time_limit=600)
    call = lw.ModelOutput.for_tool_call
    refs: list[weakref.ref[object]] = []
    record = on_transcript_open(lambda t: refs.append(weakref.ref(t)))
    states = []
    try:
        for i in range(1000):  # one task, never yielding: no purge of the loop's queue
            model = lw.get_model(
                "mock", outputs=[call("add", {"a": i, "b": 1}), call("submit", {"answer": "ok"})]
            )
            state = await lw.run(agent, "Add.", model=model, db=False)
            assert state.completed == "submit"
            states.append(state)
    finally:
        record()
    assert len(refs) == 1000
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert len(states) == 1000 and all(len(s.messages) == 5 for s in states)
