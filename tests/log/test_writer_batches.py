"""The run store writer: batching (an event put twice in one batch), unusual values, one
thread per file shared by concurrent runs, and how errors reach the runs."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import _file_thread
from loopwright.log._db import RunStoreError
from loopwright.log._file_thread import close_idle_files
from loopwright.log._serialize import dump_event, event_record, load_event
from loopwright.log._writer import RunWriter

from ._rows import event_rows as rows


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


def store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("loopwright-run-store")]


async def test_concurrent_runs_on_one_file_share_one_thread(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    before = len(store_threads())
    started = asyncio.Event()
    release = asyncio.Event()
    running = 0

    async def one(i: int) -> str:
        nonlocal running
        async with lw.recording(name=f"run{i}", db=db) as rec:
            lw.transcript().info({"i": i})
            running += 1
            if running == 50:
                started.set()
            await release.wait()
        return rec.run_id

    tasks = [asyncio.create_task(one(i)) for i in range(50)]
    await asyncio.wait_for(started.wait(), 30)
    assert len(store_threads()) == before + 1  # not one per run
    other = tmp_path / "other.db"
    async with lw.recording(name="elsewhere", db=other):
        assert len(store_threads()) == before + 2  # another file: its own thread
    release.set()
    ids = await asyncio.gather(*tasks)
    # the file stays open for the process's next run, until closed (or idle a while)
    assert len(store_threads()) == before + 2  # (other.db's too)
    close_idle_files()
    assert len(store_threads()) == before
    assert not Path(f"{db}-wal").exists()  # noqa: ASYNC240 - the WAL was folded into the file
    runs = {r.id: r for r in lw.list_runs(db)}
    assert set(runs) == set(ids) and all(r.status == "success" for r in runs.values())
    conn = sqlite3.connect(db)
    try:
        infos = conn.execute("SELECT COUNT(*) FROM events WHERE type = 'info'").fetchone()[0]
    finally:
        conn.close()
    assert infos == 50


async def test_an_event_that_cannot_be_serialised_fails_only_its_own_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    good, bad = RunWriter(db), RunWriter(db)
    event = lw.InfoEvent(data="fine")
    broken = lw.InfoEvent(data="x")
    broken.data = object()  # type: ignore[assignment]  # slipped past validation
    good.event("good", "", 0, event)
    bad.event("bad", "", 0, broken)
    await good.aclose()
    with pytest.raises(RunStoreError, match="failed"):
        await bad.aclose()
    assert [id for _, id, _ in rows(db)] == [event.id]


async def test_after_a_failed_batch_new_runs_get_a_fresh_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    before = len(store_threads())
    first, second = RunWriter(db), RunWriter(db)
    await first.flush()  # connected

    def disk_error(message: lw.ChatMessage) -> str:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_file_thread, "dump_message", disk_error)
    first.message("r1", "", 0, lw.UserMessage(content="lost"))
    with pytest.raises(RunStoreError, match="disk I/O error"):
        await first.flush()
    with pytest.raises(RunStoreError, match="disk I/O error"):
        await second.flush()  # same file, same broken connection: told too
    monkeypatch.undo()
    third = RunWriter(db)
    third.event("r3", "", 0, lw.InfoEvent(data="kept"))
    await third.aclose()
    assert len(rows(db)) == 1
    for writer in (first, second):
        with pytest.raises(RunStoreError):
            await writer.aclose()
    close_idle_files()  # (the healthy one stays open for the next run until then)
    assert len(store_threads()) == before  # both connections were closed


def test_writers_used_from_a_thread_without_an_event_loop(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    writer.event("r", "", 0, lw.InfoEvent(data="sync"))
    writer.flush_sync(timeout=30)
    assert len(rows(db)) == 1
    writer.close(timeout=30)
    writer.close(timeout=30)  # twice is fine
    with pytest.raises(RunStoreError, match="closed"):
        writer.event("r", "", 1, lw.InfoEvent(data="late"))


async def test_model_events_serialise_as_their_record_does(tmp_path: Path) -> None:
    """A model event's JSON says what its record says, pending or done, with or without
    output (its message by reference), a lone surrogate in an argument included."""
    from pydantic_core import to_json

    events: list[lw.Event] = []

    @lw.tool
    async def echo(text: str) -> str:
        """Echo.

        Args:
            text: What to echo.
        """
        return text

    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("echo", {"text": "héllo"}),
            lw.ModelOutput.for_tool_call("echo", {"text": "\ud800 lone"}),
            RuntimeError("provider down"),
        ],
    )
    with lw.observe_transcripts(events.append), pytest.raises(RuntimeError):
        await lw.run(lw.react(tools=[echo]), "go", model=model, db=False)
    # the last call failed: its event has no output
    unique = {id(e): e for e in events}  # a pending event is seen again when completed
    models = [e for e in unique.values() if isinstance(e, lw.ModelEvent)]
    assert len(models) == 3 and models[-1].output is None and models[-1].error
    pending = lw.ModelEvent(model="m", pending=True, tools=[echo.info])
    for event in [*models, pending]:
        expected = json.loads(to_json(event_record(event), inf_nan_mode="constants"))
        assert json.loads(dump_event(event)) == expected
    assert json.loads(dump_event(models[0]))["output"]["message"] == {
        "$ref": models[0].output.message.id  # type: ignore[union-attr]
    }


def one_run(db: Path, name: str) -> str:
    model = lw.get_model("mock", outputs=["done"])
    state = lw.run_sync(lw.react(submit=False), "t", model=model, db=db, name=name)
    assert state.output is not None
    [info] = [r for r in lw.list_runs(db) if r.name == name]
    return info.id


def test_runs_one_after_another_reuse_the_open_file_and_survive_kill_9(tmp_path: Path) -> None:
    """Closing a run does not close the file (no WAL fold, no sync at every run's end):
    the next run reuses the thread; what was committed is in the WAL, which a reader (or
    the next process, after a kill -9) reads."""
    db = tmp_path / "runs.db"
    before = len(store_threads())
    one_run(db, "first")
    [thread] = store_threads()[before:]
    assert Path(f"{db}-wal").exists()  # not folded in at the run's close
    one_run(db, "second")
    assert store_threads()[before:] == [thread]  # the same thread and connection
    # a copy of the files as a kill -9 would leave them (the connection still open)
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        copy.joinpath(f"runs.db{suffix}").write_bytes(Path(f"{db}{suffix}").read_bytes())
    names = sorted(r.name or "" for r in lw.list_runs(copy / "runs.db"))
    assert names == ["first", "second"]


def test_a_file_replaced_between_runs_is_opened_afresh(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    one_run(db, "old")
    os.rename(db, tmp_path / "moved.db")
    for suffix in ("-wal", "-shm"):
        if Path(f"{db}{suffix}").exists():
            os.rename(f"{db}{suffix}", tmp_path / f"moved.db{suffix}")
    one_run(db, "new")  # written to the new file, not to the moved one
    assert [r.name for r in lw.list_runs(db)] == ["new"]
    close_idle_files()
    assert [r.name for r in lw.list_runs(tmp_path / "moved.db")] == ["old"]


def test_an_idle_file_is_closed_by_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_thread, "IDLE_CLOSE", 0.05)
    db = tmp_path / "runs.db"
    before = len(store_threads())
    one_run(db, "only")
    for _ in range(200):
        if len(store_threads()) == before:
            break
        threading.Event().wait(0.05)
    assert len(store_threads()) == before
    assert not Path(f"{db}-wal").exists()  # folded into the file when it was closed
    assert [r.name for r in lw.list_runs(db)] == ["only"]
