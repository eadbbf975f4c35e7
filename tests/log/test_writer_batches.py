"""The run store writer's batching: an event put twice in one batch, unusual values."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import loopwright as lw
from loopwright.log._serialize import dump_event, event_record, load_event
from loopwright.log._writer import RunWriter


def rows(db: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT seq, id, data FROM events ORDER BY seq").fetchall()
    finally:
        conn.close()


async def test_an_event_put_twice_in_one_batch_keeps_its_first_place_and_last_state(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    call = lw.ToolCall(function="add", arguments={"a": 1})
    tool = lw.ToolEvent(call=call, pending=True)
    info = lw.InfoEvent(data="between")
    writer.event("run", "", 0, tool)
    writer.event("run", "", 1, info)
    tool.pending = None
    tool.duration = 1.5
    writer.event("run", "", 2, tool)  # the update, most likely in the same batch
    await writer.aclose()
    found = rows(db)
    assert [(seq, id) for seq, id, _ in found] == [(0, tool.id), (1, info.id)]
    data = json.loads(found[0][2])
    assert data["duration"] == 1.5 and "pending" not in data


async def test_an_update_in_a_later_batch_still_updates_the_row(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    tool = lw.ToolEvent(call=lw.ToolCall(function="add"), pending=True)
    writer.event("run", "", 0, tool)
    await writer.flush()
    assert json.loads(rows(db)[0][2])["pending"] is True
    tool.pending = None
    writer.event("run", "", 1, tool)
    await writer.aclose()
    [(seq, _, data)] = rows(db)
    assert seq == 0 and "pending" not in json.loads(data)


def test_the_encoder_writes_what_json_dumps_would() -> None:
    arguments = {"s": "héllo ☃ \u2028", "n": 1e-5, "big": 10**30, "x": float("nan")}
    events: list[lw.Event] = [
        lw.ToolEvent(call=lw.ToolCall(function="f", arguments=arguments)),
        lw.ToolEvent(call=lw.ToolCall(function="f", arguments={"bad": "\ud800"})),
        lw.InfoEvent(data={"nested": [1, 2.5, None, True, "☃"]}),
    ]
    for event in events:
        record = event_record(event)
        assert json.loads(dump_event(event)) == json.loads(json.dumps(record))
    back = load_event(dump_event(events[1]), lambda id: lw.UserMessage(content=""))
    assert isinstance(back, lw.ToolEvent) and back.call.arguments == {"bad": "\ud800"}
