"""A recorded tool call gets a list of events of its own only when an event is recorded
within it; until then its ``events`` is the shared empty ``NO_EVENTS``, which reads and
is written as ``[]`` and refuses changes (bench/README.md, round 4)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
import threading
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.transcripts import event_adapter, event_data
from loopwright.transcripts._events import NO_EVENTS
from tests._tools import add


@lw.tool
async def noted(a: int) -> int:
    """Record an event, a span with two events, and one more event, within the call.

    Args:
        a: A number.
    """
    with lw.span("inner"):  # the first event within the call is the span's
        lw.transcript().info("in the span")
        lw.transcript().info("again")
    lw.transcript().info("after the span")
    return a


@lw.tool
def threaded(a: int) -> int:
    """Record from eight threads at once, within the call (a sync tool: its own thread).

    Args:
        a: How many events each thread records.
    """
    import contextvars

    start = threading.Barrier(8)

    def record() -> None:
        start.wait()
        for _ in range(a):
            lw.transcript().info("x")

    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(record,)) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return a


def _calls(*calls: tuple[str, dict[str, int]]) -> lw.ModelOutput:
    output = lw.ModelOutput.for_tool_call(*calls[0])
    for function, arguments in calls[1:]:
        extra = lw.ModelOutput.for_tool_call(function, arguments).message.tool_calls
        output.message.tool_calls.extend(extra)
    return output


async def _tool_events(
    tools: list[lw.Tool], *calls: tuple[str, dict[str, int]]
) -> list[lw.ToolEvent]:
    model = lw.get_model("mock", outputs=[_calls(*calls)])
    async with lw.recording(db=False) as rec:
        out = await model.generate([lw.UserMessage(content="hi")], tools)
        await lw.execute_tools(out.message, tools)
    return [e for e in rec.transcript.events if isinstance(e, lw.ToolEvent)]


async def test_a_call_with_nothing_within_holds_the_shared_empty_list() -> None:
    first, second = await _tool_events([add], ("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))
    assert first.events is NO_EVENTS and second.events is NO_EVENTS
    assert first.events == [] and isinstance(first.events, list) and not first.events
    with pytest.raises(TypeError, match="nothing was recorded within this tool call"):
        first.events.append(second)
    with pytest.raises(TypeError):
        first.events += [second]
    assert NO_EVENTS == []
    # written as [] and read back as a plain list of its own
    data = event_data(first)
    assert data["events"] == []
    plain = dataclasses.replace(first, events=[])
    assert event_adapter().dump_json(first) == event_adapter().dump_json(plain)
    again = event_adapter().validate_python(data)
    assert again == first and type(again.events) is list and again.events is not NO_EVENTS
    # copies are plain lists; an event made by hand has a list of its own
    for copied in (copy.deepcopy(first), pickle.loads(pickle.dumps(first))):
        assert type(copied.events) is list and copied == first
        copied.events.append(second)
    assert copy.copy(NO_EVENTS) == [] and type(copy.copy(NO_EVENTS)) is list
    assert type(list(NO_EVENTS)) is list
    made = lw.ToolEvent(call=first.call)
    assert type(made.events) is list and made.events is not NO_EVENTS
    assert NO_EVENTS == []


async def test_events_within_a_call_and_its_spans_go_into_its_own_list() -> None:
    first, second = await _tool_events([noted], ("noted", {"a": 1}), ("noted", {"a": 2}))
    for ev in (first, second):
        assert type(ev.events) is list
        kinds = [(e.event, getattr(e, "data", None)) for e in ev.events]
        assert kinds == [
            ("span_begin", None),
            ("info", "in the span"),
            ("info", "again"),
            ("span_end", None),
            ("info", "after the span"),
        ]
        begin = ev.events[0]
        assert [e.span_id for e in ev.events] == [ev.id, begin.id, begin.id, ev.id, ev.id]
    assert first.events is not second.events
    assert NO_EVENTS == []


async def test_threads_recording_the_first_events_at_once_make_one_list() -> None:
    [ev] = await _tool_events([threaded], ("threaded", {"a": 50}))
    assert len(ev.events) == 400 and all(e.event == "info" for e in ev.events)
    assert NO_EVENTS == []


async def test_a_run_store_reads_calls_with_and_without_events_within(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=[_calls(("add", {"a": 1, "b": 2}), ("noted", {"a": 1}))])
    async with lw.recording(db=db) as rec:
        out = await model.generate([lw.UserMessage(content="hi")], [add, noted])
        await asyncio.gather(lw.execute_tools(out.message, [add, noted]))
    with lw.load_run(rec.run_id, db) as log:
        tools = [e for e in log.tree() if isinstance(e, lw.ToolEvent)]
    assert [t.function for t in tools] == ["add", "noted"]
    assert tools[0].events == [] and type(tools[0].events) is list
    assert [e.event for e in tools[1].events] == [
        "span_begin",
        "info",
        "info",
        "span_end",
        "info",
    ]
