"""The run store grows linearly, survives kill -9, and moves between stores as JSON."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._file_thread import close_idle_files

from ._scripted import hand_loop, script, shape


async def record(db: Path, steps: int) -> str:
    model = lw.get_model("mock", outputs=script(steps))
    async with lw.recording(name=f"{steps} steps", db=db) as rec:
        messages, out = await hand_loop(model)
        rec.finish(output=out, messages=messages)
    return rec.run_id


@pytest.mark.slow
async def test_a_500_step_run_is_about_ten_times_a_50_step_run(tmp_path: Path) -> None:
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    await record(small, 50)
    await record(large, 500)
    empty = tmp_path / "empty.db"
    async with lw.recording(db=empty):
        pass
    close_idle_files()  # the sizes of the files with their WAL folded in
    base = empty.stat().st_size
    ratio = (large.stat().st_size - base) / (small.stat().st_size - base)
    # linear growth gives ~10; listing every input message per step would give ~100
    assert 7 < ratio < 13, ratio
    with lw.load_run(None, large) as log:
        models = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
        assert len(models) == 500
        assert max(len(e.input) for e in models[1:]) == 2
        assert len(log.model_input(models[-1])) == 2 + 2 * 499


CRASHING_RUN = """
import asyncio, sys
import loopwright as lw

@lw.tool
async def step(i: int) -> str:
    '''One step.

    Args:
        i: Its number.
    '''
    lw.store().set("last", i)
    if i == 20:
        await lw.current_recording().flush()
        print("flushed", flush=True)
    if i > 20:
        await asyncio.sleep(0.05)
    return f"did {i}"

async def main(db):
    outputs = [lw.ModelOutput.for_tool_call("step", {"i": i}) for i in range(10_000)]
    model = lw.get_model("mock", outputs=outputs)
    async with lw.recording(name="doomed", db=db):
        messages = [lw.UserMessage(content="go on forever")]
        while True:
            out = await model.generate(messages, [step])
            messages.append(out.message)
            messages.extend(await lw.execute_tools(out.message, [step]))

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
def test_a_run_killed_mid_way_leaves_a_readable_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script_file = tmp_path / "doomed.py"
    script_file.write_text(textwrap.dedent(CRASHING_RUN))
    proc = subprocess.Popen(
        [sys.executable, str(script_file), str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "flushed"
        time.sleep(0.5)  # let it go on writing: the kill lands mid-run
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    [run] = lw.list_runs(db)
    assert run.name == "doomed" and run.status == "interrupted" and run.finished is None
    with lw.load_run(run.id, db) as log:
        events = list(log.events())
        tools = [e for e in events if isinstance(e, lw.ToolEvent) and not e.pending]
        # everything up to the flush is there, and more that was committed after it
        assert len(tools) >= 21
        assert [t.arguments["i"] for t in tools] == list(range(len(tools)))
        assert log.store()["last"] >= 20
        messages = log.messages()
        assert messages[0].text == "go on forever"
        assert [m.role for m in messages[:4]] == ["user", "assistant", "tool", "assistant"]


async def test_export_and_import_round_trip(tmp_path: Path) -> None:
    db, other = tmp_path / "a.db", tmp_path / "b.db"
    run_id = await record(db, 4)
    async with lw.recording(db=db) as rec, rec.sample("s1", input="x") as s:
        lw.transcript().info("in a sample")
        s.finish(scores={"ok": True})
    path = lw.export_run(run_id, tmp_path / "run.json", db=db)
    data = json.loads(path.read_text())
    assert data["format"] == "loopwright-run" and data["run"]["id"] == run_id
    assert len(data["messages"]) == 2 + 2 * 3 + 1
    assert lw.import_run(path, db=other) == run_id
    with lw.load_run(run_id, db) as a, lw.load_run(run_id, other) as b:
        assert list(a.events()) == list(b.events())
        assert shape(a.messages()) == shape(b.messages())
        assert a.store() == b.store() and a.info == b.info
    with lw.load_run(path) as from_file:
        assert from_file.run_id == run_id and from_file.store() == {"sums": [1, 2, 3]}
    with pytest.raises(lw.RunStoreError, match="already in the store"):
        lw.import_run(path, db=other)
    assert lw.import_run(path, db=other, replace=True) == run_id
    assert [r.id for r in lw.list_runs(other)] == [run_id]

    sample_path = lw.export_run(rec.run_id, tmp_path / "sample.json", db=db)
    with lw.load_run(sample_path) as log:
        [sample] = log.samples
        assert sample.scores == {"ok": True}
        assert [e.event for e in log.events(sample)] == ["info"]


def test_importing_something_else_fails_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(lw.RunStoreError, match="not a loopwright run export"):
        lw.import_run(bad, db=tmp_path / "x.db")
    bad.write_text("{not json")
    with pytest.raises(lw.RunStoreError, match="cannot read"):
        lw.import_run(bad, db=tmp_path / "x.db")
    bad.write_text('{"format": "loopwright-run", "version": 1, "run": {}}')
    with pytest.raises(lw.RunStoreError, match="damaged"):
        lw.import_run(bad, db=tmp_path / "x.db")


def _one_run(db: Path) -> lw.AgentState:
    done = lw.ModelOutput.for_tool_call("submit", {"answer": "x"})
    return lw.run_sync(lw.react(), "t", model=lw.get_model("mock", outputs=[done]), db=db)


def _sql(db: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    conn = sqlite3.connect(db)
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_another_apps_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    _sql(other, ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", ()))
    before = other.read_bytes()
    with pytest.raises(lw.RunStoreError, match="not a loopwright run store"):
        lw.list_runs(other)
    with pytest.raises(lw.RunStoreError, match="not a loopwright run store"):
        lw.run_sync(lw.react(), "t", model=lw.get_model("mock", outputs=["x"]), db=other)
    assert other.read_bytes() == before  # no tables added, still not in WAL mode
    assert not Path(f"{other}-wal").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(lw.RunStoreError, match="empty file"):
        lw.list_runs(empty)


def test_a_run_store_from_a_newer_loopwright_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _one_run(db)
    _sql(db, ("UPDATE meta SET value = '99' WHERE key = 'schema_version'", ()))
    with pytest.raises(lw.RunStoreError, match="schema version 99"):
        lw.list_runs(db)


def test_a_damaged_row_is_reported_with_the_run_it_belongs_to(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    user_id = _one_run(db).messages[0].id
    [info] = lw.list_runs(db)
    _sql(
        db,
        ("UPDATE events SET data = '{not json' WHERE type = 'model'", ()),
        ("UPDATE messages SET data = ? WHERE id = ?", ('{"role": "nobody"}', user_id)),
    )
    with lw.load_run(info.id, db=db) as log:
        with pytest.raises(lw.RunStoreError, match=f"run '{info.id}' in .*: an event .* damaged"):
            list(log.events())
        with pytest.raises(lw.RunStoreError, match=f"message '{user_id}' .* damaged"):
            log.message(user_id)
