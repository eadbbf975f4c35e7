"""The model and tool hooks complete their events like attribute assignment would."""

from __future__ import annotations

import loopwright as lw


@lw.tool
async def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: First.
        b: Second.
    """
    return a + b


async def test_completed_events_have_their_fields_set_and_counted_as_set() -> None:
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2})])
    async with lw.recording(db=False) as rec:
        out = await model.generate([lw.UserMessage(content="hi")], [add])
        await lw.execute_tools(out.message, [add])
    model_ev, tool_ev = [e for e in rec.transcript.events if e.event in ("model", "tool")]
    assert isinstance(model_ev, lw.ModelEvent) and isinstance(tool_ev, lw.ToolEvent)
    assert model_ev.output is out and model_ev.usage is out.usage and model_ev.pending is None
    assert model_ev.duration > 0 and model_ev.working_time <= model_ev.duration
    assert {"output", "usage", "duration", "working_time", "pending"} <= model_ev.model_fields_set
    assert tool_ev.result is not None and tool_ev.result.content == "3"
    assert tool_ev.pending is None and tool_ev.error is None and tool_ev.failure is None
    assert {"result", "duration", "working_time", "pending"} <= tool_ev.model_fields_set
    dumped = tool_ev.model_dump(exclude_unset=True)
    assert dumped["pending"] is None and dumped["result"]["content"] == "3"
    # still plain pydantic models: assignment and validation of a copy work as before
    again = lw.ToolEvent.model_validate(tool_ev.model_dump())
    assert again.result == tool_ev.result


async def test_completing_an_event_leaves_the_fields_that_did_not_change_unset() -> None:
    """Only what changed is assigned: pydantic's set of fields set of a model event stays
    at its first size (a live transcript holds one per call; at 10,000 agents...)."""
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2})])
    async with lw.recording(db=False) as rec:
        out = await model.generate([lw.UserMessage(content="hi")], [add])
        await lw.execute_tools(out.message, [add])
    model_ev, tool_ev = [e for e in rec.transcript.events if e.event in ("model", "tool")]
    assert isinstance(model_ev, lw.ModelEvent) and isinstance(tool_ev, lw.ToolEvent)
    unchanged = {"fallbacks", "error", "retries"}
    assert not unchanged & model_ev.model_fields_set
    assert model_ev.fallbacks is None and model_ev.error is None and model_ev.retries == 0
    assert not {"approval", "error", "failure", "traceback", "truncated"} & tool_ev.model_fields_set
    assert len(model_ev.model_fields_set) <= 18  # (a set's table grows past 18 names)
