"""Events are slotted dataclasses now (they were pydantic models): the run store's rows
they make are the rows the pydantic models made (the same JSON value; byte for byte but
for the message references, now written where their fields are, as one serializer pass
writes them: first in a model event's output, after a tool event's call; they came
last), and rows written before read back as the same events; damaged rows are refused
as before."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

import loopwright as lw
from loopwright.log._serialize import dump_event, load_event, load_message
from loopwright.transcripts import event_adapter, event_data

ROWS = json.loads((Path(__file__).parent / "data" / "event_rows.json").read_text())
"""One row of each kind of event, written by the pydantic events (``data/make_event_rows.py``
run with the code of main at b014137)."""


def _message(id: str) -> lw.ChatMessage:
    return load_message(ROWS["messages"][id])


@pytest.mark.parametrize("row", ROWS["events"], ids=lambda r: json.loads(r)["id"])
def test_rows_written_by_the_pydantic_events_read_back_and_are_written_the_same(row: str) -> None:
    ev = load_event(row, _message)
    assert ev.event == json.loads(row)["event"] and dataclasses.is_dataclass(ev)
    assert not hasattr(ev, "__dict__")  # a slotted dataclass
    again = dump_event(ev)
    assert json.loads(again) == json.loads(row)  # the same JSON value
    assert again == _moved(row)  # the same bytes, where the order is unchanged


def _moved(row: str) -> str:
    """``row`` with its message references where the serializer writes them now."""
    data = json.loads(row)
    if data["event"] == "model" and "output" in data:
        out = data["output"]
        data["output"] = {"message": out.pop("message"), **out}
    elif data["event"] == "tool" and "result" in data:
        result = data.pop("result")
        data = dict(_after(data, "call", "result", result))
    else:
        return row
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _after(data: dict[str, object], key: str, new: str, value: object) -> list[tuple[str, object]]:
    items = list(data.items())
    at = [k for k, _ in items].index(key) + 1
    return [*items[:at], (new, value), *items[at:]]


def test_every_kind_of_event_is_in_the_rows() -> None:
    kinds = {json.loads(r)["event"] for r in ROWS["events"]}
    assert kinds == {
        "model", "tool", "store", "info", "span_begin", "span_end", "subtask",
        "logger", "limit", "error", "sandbox", "approval",
    }  # fmt: skip


@pytest.mark.parametrize("row", ROWS["events"], ids=lambda r: json.loads(r)["id"])
def test_a_round_trip_through_the_adapter_gives_an_equal_event(row: str) -> None:
    ev = load_event(row, _message)
    data = event_adapter().dump_python(ev, mode="json")
    again = event_adapter().validate_python(data)
    assert again == ev and type(again) is type(ev)
    assert event_adapter().validate_json(event_adapter().dump_json(ev)) == ev
    assert event_data(again) == event_data(ev)


def test_the_fields_and_defaults_are_those_of_the_models() -> None:
    call = lw.ToolCall(id="c", function="f", arguments={"x": 1})
    ev = lw.ToolEvent(call=call)
    assert ev.event == "tool" and ev.events == [] and ev.pending is None and ev.truncated is False
    assert ev.function == "f" and ev.arguments == {"x": 1}
    assert ev.timestamp.tzinfo is not None and ev.id and ev.span_id is None
    other = lw.ToolEvent(call=call)
    assert other.id != ev.id and other.events is not ev.events  # fresh defaults
    m = lw.ModelEvent(model="m")
    assert m.input == [] and m.config == lw.GenerateConfig() and m.input_base_count == 0
    with pytest.raises(TypeError):
        lw.ModelEvent("m")  # type: ignore[misc]  # keywords only, as before
    with pytest.raises(TypeError):
        lw.SpanBegin()  # type: ignore[call-arg]  # a required field
    with pytest.raises(AttributeError):
        m.nonsense = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "row",
    [
        '{"id":"x","event":"model","model":["not","a","string"]}',
        '{"id":"x","event":"model"}',
        '{"id":"x","event":"nonsense","model":"m"}',
        '{"id":"x","model":"m"}',
        '{"id":"x","event":"span_end","begin":"b","timestamp":"yesterday"}',
        '{"id":"x","event":"tool","call":{"id":"c","function":"f","arguments":{}},'
        '"events":[{"event":"info","id":1}]}',
        '{"id":"x","event":"sandbox","action":"rm -rf /"}',
        '{"id":"x","event":"approval","call":{"id":"c","function":"f","arguments":{}},'
        '"decision":"maybe"}',
    ],
)
def test_a_damaged_row_raises_a_validation_error(row: str) -> None:
    with pytest.raises(ValidationError):
        load_event(row, _message)


def test_a_damaged_row_in_a_store_is_a_run_store_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=[lw.ModelOutput.from_text("hi")])
    asyncio.run(lw.run(lw.react(submit=False), "go", model=model, db=db))
    [info] = lw.list_runs(db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE events SET data = json_set(data, '$.working_start', 'soon') WHERE run_id = ?",
            (info.id,),
        )
    conn.close()
    with lw.load_run(info.id, db) as log, pytest.raises(lw.RunStoreError, match="damaged"):
        list(log.events())


@lw.tool
async def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: First.
        b: Second.
    """
    lw.transcript().info({"adding": [a, b]})
    return a + b


async def test_a_recorded_run_s_rows_read_back_as_its_events(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    @lw.subtask
    async def side(n: int) -> dict[str, int]:
        logging.getLogger("side").warning("side %d", n)
        return {"n": n}

    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2})])
    async with lw.recording(db=db) as rec:
        with lw.span("work", type="step"):
            await side(4)
            out = await model.generate([lw.UserMessage(content="hi")], [add])
            results = await lw.execute_tools(out.message, [add])
        lw.store().set("k", [1, 2])
    assert results[0].content == "3"
    live = list(rec.transcript.walk())
    with sqlite3.connect(db) as conn:
        rows = [r[0] for r in conn.execute("SELECT data FROM events ORDER BY seq")]
    conn.close()
    with lw.load_run(rec.run_id, db) as log:
        read = list(log.events())
        for row in rows:  # written by this code (a model event's tools by reference)
            tools = json.loads(row).get("tools")
            ref = tools["$ref"] if isinstance(tools, dict) else None
            assert dump_event(load_event(row, log.message, log._tool_set), ref) == row
    assert {e.event for e in read} >= {"model", "tool", "info", "subtask", "logger", "store"}
    assert [e.id for e in read] == [e.id for e in live]
    for a, b in zip(read, live, strict=True):
        assert event_data(a, exclude={"events"}) == event_data(b, exclude={"events"})


@pytest.mark.parametrize(
    "bad",
    [
        lambda: lw.InfoEvent(data=object()),  # type: ignore[arg-type]
        lambda: lw.SpanBegin(name="x", timestamp="2024-01-01"),  # type: ignore[arg-type]
        lambda: lw.SpanBegin(name="x", span_id=12),  # type: ignore[arg-type]
    ],
    ids=["not-json", "str-timestamp", "int-span-id"],
)
async def test_an_event_made_with_a_wrong_value_is_refused_alone(
    bad: object, tmp_path: Path
) -> None:
    """Events are not validated when made (pydantic refused some of these there):
    ``record()`` refuses such an event where it is recorded, and the run goes on to write
    its other events (the run store is not failed by it)."""
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        lw.transcript().info("before")
        with pytest.raises(TypeError, match="not recorded"):
            lw.transcript().record(bad())  # type: ignore[operator]
        lw.transcript().info("after")
    with lw.load_run(rec.run_id, db) as log:
        assert log.info.status == "success"
        assert [e.data for e in log.events() if isinstance(e, lw.InfoEvent)] == [
            "before",
            "after",
        ]


def _two_passes(event: lw.Event) -> str:
    """A row as the writer made it before its one pass: JSON data, then text."""
    from pydantic_core import to_json

    from loopwright.log._serialize import event_record

    return to_json(event_record(event), inf_nan_mode="strings").decode()


def test_non_finite_floats_are_written_as_sqlite_and_pydantic_read_them() -> None:
    """Strings in typed fields (``"Infinity"``, ``"NaN"``: pydantic reads them back as
    floats; the constants rows had before made SQLite's ``json_extract`` on the row fail,
    and with it the resume point and the usage totals: see test_lost_rows.py), null in
    untyped data (a call's arguments, a store's patch, an info event's data), as the
    two-pass writer did."""
    call = lw.ToolCall(id="c", function="f", arguments={"a": math.nan, "b": [math.inf]})
    events: list[lw.Event] = [
        lw.ModelEvent(model="m", cost=math.inf, duration=math.nan),
        lw.ToolEvent(call=call, duration=-math.inf),
        lw.StoreEvent(changes=[{"op": "add", "path": "/x", "value": math.inf}]),
        lw.LimitEvent(type="time", limit=math.inf),
    ]
    for event in events:
        row = dump_event(event)
        assert row == _two_passes(event)
        again = load_event(row, _message)
        assert type(again) is type(event)
    assert json.loads(dump_event(events[1]))["call"]["arguments"] == {"a": None, "b": [None]}
    row = dump_event(events[0])
    assert '"cost":"Infinity"' in row
    again = load_event(row, _message)
    assert isinstance(again, lw.ModelEvent) and again.cost == math.inf
    assert math.isnan(again.duration)
    conn = sqlite3.connect(":memory:")
    assert conn.execute("SELECT json_extract(?, '$.cost')", (row,)).fetchone() == ("Infinity",)
    info = lw.InfoEvent(data={"x": math.inf, "text": "NaN and Infinity, as words"})
    data = {"x": None, "text": "NaN and Infinity, as words"}
    assert json.loads(dump_event(info))["data"] == data


def test_a_message_is_written_by_reference_only_where_the_row_asks() -> None:
    """The serializer on ``ModelOutput.message`` and ``ToolEvent.result`` writes the message
    itself in every other dump (``event_data``, ``event_adapter()``, a model output's own
    adapter, ``AgentState``): the run store's context alone asks for ``{"$ref": id}``."""
    from pydantic import TypeAdapter

    from loopwright.model._output import MESSAGE_REFS

    output = lw.ModelOutput.for_tool_call("f", {"a": 1}, tool_call_id="c")
    result = lw.ToolMessage(content="done", tool_call_id="c", function="f")
    model_event = lw.ModelEvent(model="m", output=output)
    tool_event = lw.ToolEvent(call=output.message.tool_calls[0], result=result)
    message = output.message.model_dump(mode="json")
    assert event_data(model_event)["output"]["message"] == output.message.model_dump(
        mode="json", exclude_none=True
    )
    assert json.loads(event_adapter().dump_json(model_event))["output"]["message"] == message
    assert event_data(tool_event)["result"]["content"] == "done"
    assert json.loads(TypeAdapter(lw.ModelOutput).dump_json(output))["message"] == message
    state = lw.AgentState(output=output)
    assert state.model_dump(mode="json")["output"]["message"] == message
    refs = TypeAdapter(lw.ModelOutput).dump_python(output, context=MESSAGE_REFS)
    assert refs["message"] == {"$ref": output.message.id}
    assert json.loads(dump_event(model_event))["output"]["message"] == {"$ref": output.message.id}
    assert json.loads(dump_event(tool_event))["result"] == {"$ref": result.id}
    for event in (model_event, tool_event):
        assert dump_event(event) == _two_passes(event)


def test_nested_events_are_rows_of_their_own() -> None:
    inner = lw.InfoEvent(data="inside")
    call = lw.ToolCall(id="c", function="f")
    for event in (
        lw.ToolEvent(call=call, events=[inner]),
        lw.SubtaskEvent(name="s", events=[inner]),
    ):
        row = dump_event(event)
        assert "events" not in json.loads(row) and "inside" not in row
        assert row == _two_passes(event)


def test_a_lone_surrogate_and_arguments_too_deep_take_the_slow_way() -> None:
    from loopwright._nesting import MAX_NESTING

    lone = lw.InfoEvent(data={"name": "bad \udc80 name"})
    row = dump_event(lone)
    assert "\\udc80" in row and json.loads(row)["data"]["name"] == "bad \udc80 name"
    deep: object = 1
    for _ in range(MAX_NESTING * 4):
        deep = [deep]
    event = lw.ToolEvent(call=lw.ToolCall(id="c", function="f", arguments={"x": deep}))
    data = json.loads(dump_event(event))
    assert data["call"]["arguments"] == {} and "nest" in data["call"]["parse_error"]


def test_a_subclass_of_an_event_is_written_as_its_kind() -> None:
    @dataclasses.dataclass(slots=True, kw_only=True)
    class Noted(lw.InfoEvent):
        note: str = "not a field of the row"

    event = Noted(id="n", data="x")
    plain = lw.InfoEvent(id="n", data="x", timestamp=event.timestamp)
    assert dump_event(event) == dump_event(plain)


def test_a_caller_s_own_context_is_left_alone() -> None:
    """Only the object ``MESSAGE_REFS`` asks for references: an equal dict, or a context
    of any other type, gives the message (and no error)."""
    from pydantic import TypeAdapter

    output = lw.ModelOutput.from_text("hi")
    adapter = TypeAdapter(lw.ModelOutput)
    for context in ({"message_refs": True}, "mine", 3, None):
        assert adapter.dump_python(output, context=context)["message"]["content"] == "hi"
    assert lw.AgentState(output=output).model_dump(context="x")["output"]["message"]["id"]


def test_a_config_float_that_is_not_finite_reads_back() -> None:
    """A model event's config (a pydantic model of its own) writes ``inf`` as a typed
    field's (``"Infinity"``), not as ``null`` (which read back as no timeout)."""
    config = lw.GenerateConfig(timeout=math.inf, retry_wait=math.inf)
    event = lw.ModelEvent(model="m", config=config)
    row = dump_event(event)
    assert '"timeout":"Infinity"' in row and '"retry_wait":"Infinity"' in row
    back = load_event(row, _message)
    assert isinstance(back, lw.ModelEvent) and back.config == config
