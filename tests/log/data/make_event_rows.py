"""Writes ``event_rows.json``: one run store row of each kind of event (and the messages
they refer to), as a version of loopwright writes them. Run it with the code whose rows
are to be kept, e.g. ``PYTHONPATH=/path/to/old/src python tests/log/data/make_event_rows.py``;
``tests/log/test_event_rows.py`` reads the rows back with today's code."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import loopwright as lw
from loopwright.log._serialize import dump_event, dump_message
from loopwright.model import GenerateConfig, ToolCallError, ToolInfo
from loopwright.tools import Approval

T = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def main() -> None:
    call = lw.ToolCall(id="c1", function="add", arguments={"a": 1, "b": [2, {"c": None}]})
    answer = lw.AssistantMessage(id="m2", content="adding", tool_calls=[call], model="mock")
    result = lw.ToolMessage(id="m3", content="3", tool_call_id="c1", function="add")
    out = lw.ModelOutput(
        message=answer,
        stop_reason="tool_calls",
        usage=lw.Usage(input_tokens=5, output_tokens=2, total_tokens=7, reasoning_tokens=1),
        model="mock",
        time=0.25,
    )
    base = {"timestamp": T, "working_start": 0.5}
    inner = lw.InfoEvent(id="e9", span_id="e2", data={"nested": [1, 2.5, None, True]}, **base)
    events = [
        lw.ModelEvent(
            id="e1",
            model="mock/x",
            input=["m1"],
            tools=[ToolInfo(name="add", description="Add.")],
            config=GenerateConfig(temperature=0.5, max_tokens=100),
            output=out,
            usage=out.usage,
            cost=0.001,
            retries=1,
            fallbacks=["other/y: HTTP 500"],
            duration=1.5,
            wait_time=0.5,
            working_time=1.0,
            step=True,
            **base,
        ),
        lw.ModelEvent(
            id="e1b",
            model="mock/x",
            input=["m4"],
            input_base="e1",
            input_base_count=3,
            error="RuntimeError: boom",
            pending=True,
            **base,
        ),
        lw.ToolEvent(
            id="e2",
            call=call,
            result=result,
            error=ToolCallError(type="validation", message="bad"),
            failure="ValueError: x",
            traceback="Traceback...",
            truncated=True,
            approval=Approval(decision="modify", modified=call, explanation="ok", approver="a"),
            duration=0.1,
            working_time=0.05,
            events=[inner],
            **base,
        ),
        lw.ToolEvent(id="e2b", call=call, pending=True, **base),
        inner,
        lw.StoreEvent(
            id="e3", store="s1", changes=[{"op": "add", "path": "/x", "value": [1]}], **base
        ),
        lw.InfoEvent(id="e4", source="me", data="**markdown** \u00e9 \U0001f600", **base),
        lw.SpanBegin(id="e5", name="step", type="agent", **base),
        lw.SpanEnd(id="e6", begin="e5", error="KeyError: 'k'", span_id="e0", **base),
        lw.SubtaskEvent(
            id="e7",
            name="sub",
            type="fork",
            input={"branch": 1, "messages": [1, "a"]},
            result={"ok": 1},
            error=None,
            events=[inner],
            duration=2.0,
            working_time=1.0,
            **base,
        ),
        lw.LoggerEvent(
            id="e8",
            level="WARNING",
            levelno=30,
            logger="x.y",
            message="careful",
            filename="/a.py",
            lineno=3,
            **base,
        ),
        lw.LimitEvent(id="e10", type="step", limit=10, value=10, message="step limit", **base),
        lw.ErrorEvent(id="e11", error="ValueError", message="bad", traceback="tb", **base),
        lw.SandboxEvent(
            id="e12", action="exec", cmd=["ls", "-l"], input="in", result=0, output="out", **base
        ),
        lw.SandboxEvent(id="e13", action="read_file", file="/f", cmd="ls", **base),
        lw.ApprovalEvent(
            id="e14",
            call=call,
            decision="reject",
            approver="human",
            explanation="no",
            modified=call,
            **base,
        ),
    ]
    data = {
        "messages": {m.id: dump_message(m) for m in (answer, result)},
        "events": [dump_event(e) for e in events],  # type: ignore[arg-type]
    }
    path = Path(__file__).with_name("event_rows.json")
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
