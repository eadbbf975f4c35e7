"""A model event's tools are written once per run and list (the ``tool_sets`` table, the
row holding ``"tools": {"$ref": id}``, schema version 2), read back as the list itself;
rows and files written before (tools inline, version 1) still read; exports hold the
tools inline."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log import _db, _file_thread, _serialize
from loopwright.log._serialize import dump_event, dump_tools, load_event, tool_set_id
from loopwright.model import _redact
from loopwright.model._offered import OfferedTools

from .._tools import add, sub


def _rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _calls(n: int) -> list[lw.ModelOutput]:
    return [
        *(lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}) for i in range(n)),
        lw.ModelOutput.from_text("done"),
    ]


def _run(db: Path, steps: int, tools: list[lw.Tool[Any]] | None = None) -> str:
    model = lw.get_model("mock", outputs=_calls(steps))
    agent = lw.react(tools=tools or [add, sub], submit=False)
    state = asyncio.run(lw.run(agent, "go", model=model, db=db))
    assert state.output.text == "done"
    return lw.list_runs(db)[0].id


def test_a_run_s_model_events_refer_to_one_tool_set_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumped: list[list[lw.ToolInfo]] = []

    def counting(tools: list[lw.ToolInfo]) -> str:
        dumped.append(tools)
        return dump_tools(tools)

    monkeypatch.setattr(_serialize, "dump_tools", counting)
    db = tmp_path / "runs.db"
    run_id = _run(db, 5)
    [(set_id, text)] = _rows(db, "SELECT id, data FROM tool_sets WHERE run_id = ?", (run_id,))
    assert set_id == tool_set_id(text)
    assert [t["name"] for t in json.loads(text)] == ["add", "sub"]
    refs = _rows(db, "SELECT data FROM events WHERE type = 'model' AND run_id = ?", (run_id,))
    assert len(refs) == 6
    for (row,) in refs:
        assert json.loads(row)["tools"] == {"$ref": set_id}
        assert "Subtract." not in row
    # the model's one OfferedTools list: serialised once for the six calls (one batch)
    assert len(dumped) == 1 and isinstance(dumped[0], OfferedTools)
    with lw.load_run(run_id, db) as log:
        events = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
        assert [[t.name for t in e.tools] for e in events] == [["add", "sub"]] * 6
        assert events[0].tools == [add.info, sub.info]
        # each event its own list and tools (a change to one is not seen in another)
        assert events[0].tools is not events[1].tools
        assert events[0].tools[0] is not events[1].tools[0]
        events[0].tools[0].parameters["properties"].clear()
        assert events[1].tools[0].parameters == add.info.parameters
        assert type(events[0].tools) is list


def _no_message(id: str) -> lw.ChatMessage:
    raise AssertionError(id)


def _from(stored: dict[str, str]) -> Any:
    return lambda id: json.loads(stored[id])


def test_the_tool_set_holds_what_the_row_held_inline(tmp_path: Path) -> None:
    """The table's text is the JSON value a version 1 row held, for hostile tools too:
    a lone surrogate, a non-finite float and the word Infinity in a schema."""
    odd = [
        lw.ToolInfo(name="a", description="bad name \udcff here"),
        lw.ToolInfo(name="b", parameters={"type": "object", "default": math.inf, "x": math.nan}),
        lw.ToolInfo(name="c", description="counts to Infinity and NaN"),
        add.info,
    ]
    stored: dict[str, str] = {}
    for tools in ([t] for t in odd):
        ev = lw.ModelEvent(model="m", tools=tools)
        inline = json.loads(dump_event(ev))
        text = dump_tools(tools)
        assert json.loads(text) == inline["tools"]
        ref = tool_set_id(text)
        row = dump_event(ev, ref)
        assert json.loads(row) == {**inline, "tools": {"$ref": ref}}
        stored[ref] = text
        back = load_event(row, _no_message, _from(stored))
        again = load_event(dump_event(ev), _no_message)
        assert back == again
    with pytest.raises(ValueError, match="no tool sets"):
        load_event(row, _no_message)
    with pytest.raises(TypeError, match="offers no tools"):
        dump_event(lw.InfoEvent(data="x"), "abc")


async def test_plain_lists_are_stored_once_by_their_digest(tmp_path: Path) -> None:
    """A list that is not an OfferedTools (an event made by hand, a hook's list) is
    serialised each time, and stored once for the run all the same; an empty list is
    written in the row."""
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        for tools in ([add.info], [add.info], [add.info, sub.info], [], [add.info]):
            lw.transcript().record(lw.ModelEvent(model="m", tools=list(tools)))
    sets = dict(_rows(db, "SELECT id, data FROM tool_sets WHERE run_id = ?", (rec.run_id,)))
    assert sorted(len(json.loads(t)) for t in sets.values()) == [1, 2]
    rows = [json.loads(r) for (r,) in _rows(db, "SELECT data FROM events ORDER BY seq")]
    assert [r["tools"] for r in rows][3] == []
    refs = [r["tools"]["$ref"] for r in rows if r["tools"]]
    assert refs[0] == refs[1] == refs[3] != refs[2] and set(refs) == set(sets)
    with lw.load_run(rec.run_id, db) as log:
        read = [[t.name for t in e.tools] for e in log.events() if isinstance(e, lw.ModelEvent)]
    assert read == [["add"], ["add"], ["add", "sub"], [], ["add"]]


def test_each_run_has_its_rows_and_a_secret_learnt_is_redacted_from_the_next(
    tmp_path: Path,
) -> None:
    """The writer keeps an OfferedTools list's text across runs (its file stays open):
    each run still gets its own row, and a secret learnt since is redacted from it."""
    secret = "tool-secret-0123456789abcdef"
    info = lw.ToolInfo(name="peek", description=f"uses {secret}")
    shared = OfferedTools([info])
    db = tmp_path / "runs.db"

    async def one() -> str:
        async with lw.recording(db=db) as rec:
            lw.transcript().record(lw.ModelEvent(model="m", tools=shared))
            lw.transcript().record(lw.ModelEvent(model="m", tools=shared))
        return rec.run_id

    first = asyncio.run(one())
    _redact.learn_secrets([secret])
    second = asyncio.run(one())
    third = asyncio.run(one())
    rows = _rows(db, "SELECT run_id, id, data FROM tool_sets")
    assert sorted(r[0] for r in rows) == sorted([first, second, third])
    by_run = {r[0]: r for r in rows}
    assert secret in by_run[first][2]  # written before it was known
    for run in (second, third):
        assert secret not in by_run[run][2] and _redact.REDACTED in by_run[run][2]
    assert by_run[second][1] == by_run[third][1] != by_run[first][1]
    with lw.load_run(third, db) as log:
        [ev, _] = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
        assert ev.tools[0].description == f"uses {_redact.REDACTED}"


def _as_version_1(db: Path) -> None:
    """Rewrite a store as a version 1 file: the tools inline, no tool_sets table."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE events SET data = json_set(data, '$.tools', json((SELECT t.data FROM "
            "tool_sets t WHERE t.run_id = events.run_id AND t.id = json_extract(events.data, "
            "'$.tools.\"$ref\"')))) WHERE type = 'model' AND json_type(data, '$.tools') = "
            "'object'"
        )
        conn.execute("DROP TABLE tool_sets")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()


def test_a_version_1_file_reads_and_a_writer_makes_it_version_2(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    old = _run(db, 2)
    _file_thread.close_idle_files()
    with lw.load_run(old, db) as log:
        before = [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)]
    _as_version_1(db)
    [(row,)] = _rows(db, "SELECT data FROM events WHERE type = 'model' LIMIT 1")
    assert json.loads(row)["tools"][0]["name"] == "add"  # inline, as version 1 wrote it
    with lw.load_run(old, db) as log:  # read as it is: nothing written
        assert [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)] == before
    assert _rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("1",)]
    new = _run(db, 1)  # a writer opening it
    assert _rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("2",)]
    assert len(_rows(db, "SELECT * FROM tool_sets WHERE run_id = ?", (new,))) == 1
    with lw.load_run(old, db) as log:
        assert [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)] == before
    with lw.load_run(new, db) as log:
        assert [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)] == before[:2]


def test_a_loopwright_reading_only_version_1_says_to_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    _run(db, 1)
    monkeypatch.setattr(_db, "SCHEMA_VERSION", 1)
    with pytest.raises(lw.RunStoreError, match=r"schema version 2.*upgrade loopwright"):
        lw.list_runs(db)
    with pytest.raises(lw.RunStoreError, match="upgrade loopwright"):
        _db.connect(db)


def test_a_newer_version_is_not_lowered_by_a_writer(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _db.connect(db).close()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(lw.RunStoreError, match="schema version 3"):
        _db.connect(db)
    assert _rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]


def test_an_export_holds_the_tools_inline_and_imports_anywhere(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _run(db, 2)
    with lw.load_run(run_id, db) as log:
        live = [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)]
    out = lw.export_run(run_id, tmp_path / "run.json", db=db)
    data = json.loads(out.read_text())
    models = [e["data"] for e in data["events"] if e["type"] == "model"]
    assert [[t["name"] for t in m["tools"]] for m in models] == [["add", "sub"]] * 3
    with lw.load_run(str(out)) as log:  # imported into memory
        assert [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)] == live
    # replacing the run in its own store: its tool set goes with its old rows
    assert lw.import_run(out, db=db, replace=True) == run_id
    assert _rows(db, "SELECT COUNT(*) FROM tool_sets WHERE run_id = ?", (run_id,)) == [(0,)]
    with lw.load_run(run_id, db) as log:
        assert [e.tools for e in log.events() if isinstance(e, lw.ModelEvent)] == live


def test_a_missing_tool_set_is_a_damaged_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _run(db, 1)
    _file_thread.close_idle_files()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM tool_sets")
    conn.close()
    with lw.load_run(run_id, db) as log, pytest.raises(lw.RunStoreError, match="damaged"):
        list(log.events())
    with pytest.raises(lw.RunStoreError, match="damaged"):
        lw.export_run(run_id, tmp_path / "run.json", db=db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO tool_sets VALUES (?, 'x', '{\"not\": \"a list\"}')", (run_id,))
        conn.execute(
            "UPDATE events SET data = json_set(data, '$.tools', json('{\"$ref\":\"x\"}')) "
            "WHERE type = 'model'"
        )
    conn.close()
    with lw.load_run(run_id, db) as log, pytest.raises(lw.RunStoreError, match="tool set 'x'"):
        list(log.events())


async def test_a_tool_set_deleted_meanwhile_is_written_again(tmp_path: Path) -> None:
    """Nothing in the writer assumes a run's tool set is still there from an earlier
    batch (an import replacing the run deletes it, also from another process): each
    batch writes the sets its events refer to, ``INSERT OR IGNORE``."""
    from loopwright.log._writer import RunWriter

    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    tools = OfferedTools([add.info, sub.info])
    writer.event("r", "", 0, lw.ModelEvent(model="m", tools=tools))
    await writer.flush()
    [(first,)] = _rows(db, "SELECT id FROM tool_sets WHERE run_id = 'r'")
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM tool_sets")
    conn.commit()
    conn.close()
    writer.event("r", "", 1, lw.ModelEvent(model="m", tools=tools))
    await writer.flush()
    await writer.aclose()
    assert _rows(db, "SELECT id FROM tool_sets WHERE run_id = 'r'") == [(first,)]


async def test_a_tool_changed_in_place_is_stored_as_changed(tmp_path: Path) -> None:
    """The same list, its tool's info changed in place between two batches: each event's
    tool set is what the list held when it was written (never text kept from before)."""
    from loopwright.log._writer import RunWriter

    db = tmp_path / "runs.db"
    info = lw.ToolInfo(name="note", description="Version one.")
    tools = OfferedTools([info])
    writer = RunWriter(db)
    writer.event("r", "", 0, lw.ModelEvent(model="m", tools=tools))
    await writer.flush()
    info.description = "Version two."
    writer.event("r", "", 1, lw.ModelEvent(model="m", tools=tools))
    await writer.aclose()
    sets = dict(_rows(db, "SELECT id, data FROM tool_sets WHERE run_id = 'r'"))
    refs = [
        json.loads(data)["tools"]["$ref"]
        for (data,) in _rows(db, "SELECT data FROM events WHERE run_id = 'r' ORDER BY seq")
    ]
    said = [json.loads(sets[ref])[0]["description"] for ref in refs]
    assert said == ["Version one.", "Version two."]
