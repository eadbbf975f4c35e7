"""The model and tool hooks fill in their events' fields (slotted dataclasses) and the
model outputs' without growing pydantic's fields-set tables, and the events hold the very
objects the conversation holds."""

from __future__ import annotations

import pytest

import loopwright as lw
from loopwright.transcripts import event_adapter
from tests._tools import add


async def _events() -> tuple[lw.ModelEvent, lw.ToolEvent, lw.ModelOutput, list[lw.ToolMessage]]:
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2})])
    async with lw.recording(db=False) as rec:
        out = await model.generate([lw.UserMessage(content="hi")], [add])
        results = await lw.execute_tools(out.message, [add])
    model_ev, tool_ev = [e for e in rec.transcript.events if e.event in ("model", "tool")]
    assert isinstance(model_ev, lw.ModelEvent) and isinstance(tool_ev, lw.ToolEvent)
    return model_ev, tool_ev, out, results


async def test_completed_events_have_their_fields_filled_in() -> None:
    model_ev, tool_ev, out, _ = await _events()
    assert model_ev.output is out and model_ev.usage is out.usage and model_ev.pending is None
    assert model_ev.duration > 0 and model_ev.working_time <= model_ev.duration
    assert out.time is not None and out.time >= 0 and out.model == "mock"
    assert tool_ev.result is not None and tool_ev.result.content == "3"
    assert tool_ev.pending is None and tool_ev.error is None and tool_ev.failure is None
    dumped = event_adapter().dump_python(tool_ev, mode="json")
    assert dumped["pending"] is None and dumped["result"]["content"] == "3"
    # slotted dataclasses: assignment, and validation of a dump through the adapter
    again = event_adapter().validate_python(dumped)
    assert isinstance(again, lw.ToolEvent) and again == tool_ev
    again.pending = True
    assert again.pending is True
    with pytest.raises(AttributeError):
        again.pendin = True  # type: ignore[attr-defined]


async def test_the_records_a_live_run_keeps_per_step_are_slotted() -> None:
    """A live transcript holds every event and output: slotted, with no instance dict
    and no pydantic fields-set table (bench/README.md, round 3)."""
    model_ev, tool_ev, out, _ = await _events()
    # the events and the output are slotted dataclasses: no instance dict, no fields-set table
    for record in (model_ev, tool_ev, out):
        assert not hasattr(record, "__dict__") and not hasattr(record, "model_fields_set")
    assert out.time is not None


async def test_events_hold_the_conversations_own_objects() -> None:
    """No copies: the model event's output message is the message the agent appends to
    its history, the tool event's result is the tool message, and the tools offered are
    the call's list as it was made for the call."""
    model_ev, tool_ev, out, results = await _events()
    assert model_ev.output is out and model_ev.output.message is out.message
    assert tool_ev.result is results[0]
    assert tool_ev.call is out.message.tool_calls[0]
    assert [t.name for t in model_ev.tools] == ["add"]


async def test_a_run_s_events_are_its_history_s_messages() -> None:
    seen: list[lw.Event] = []
    agent = lw.react(tools=[add])
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "3"}),
        ],
    )
    with lw.observe_transcripts(seen.append):
        state = await lw.run(agent, "add", model=model, db=False)
    by_id = {id(m) for m in state.messages}
    model_evs = [e for e in seen if isinstance(e, lw.ModelEvent) and e.output is not None]
    tool_evs = [e for e in seen if isinstance(e, lw.ToolEvent) and e.result is not None]
    assert model_evs and tool_evs
    assert all(id(e.output.message) in by_id for e in model_evs if e.output is not None)
    assert all(id(e.result) in by_id for e in tool_evs)


async def test_completing_an_event_leaves_the_fields_that_did_not_change_as_they_were() -> None:
    model_ev, tool_ev, _, _ = await _events()
    assert model_ev.fallbacks is None and model_ev.error is None and model_ev.retries == 0
    assert tool_ev.approval is None and tool_ev.truncated is False and tool_ev.traceback is None
