"""A run that loses a row (a value its writer cannot serialise) ends readable and says
so, whichever batch its other rows fall in, whatever its end (an error raised, a limit
raised), and whatever folder the process is in by then."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._outcome import RunEnd, Sink, json_text
from loopwright.log._recording import RunRecorder
from loopwright.log._writer import RunWriter
from loopwright.transcripts import ModelEvent


def _unwritable() -> lw.AssistantMessage:
    call = lw.ToolCall(id="c", function="f", arguments={"v": object()})  # (not JSON)
    return lw.AssistantMessage(content="", tool_calls=[call])


async def _opened(db: Path) -> tuple[RunRecorder, Sink]:
    rec = RunRecorder(db, "run1")
    await rec.open(name="n", model=None, input="go", metadata={}, store_id="s")
    assert rec.writer is not None
    return rec, Sink(rec.writer, "run1", "", itertools.count())


def _readable_events(db: Path) -> list[lw.Event]:
    [info] = lw.list_runs(db)
    assert info.status == "error" and "serialize" in (info.error or "")
    with lw.load_run(info.id, db=db) as log:
        return list(log.events())


async def test_an_event_written_before_its_message_is_lost_is_left_out(tmp_path: Path) -> None:
    """The writer took the batch holding the pending event, then the call completed (the
    event now refers to its message) and the message was lost in the next batch: the
    event, written already, must go (it referred to a message not written)."""
    db = tmp_path / "runs.db"
    rec, sink = await _opened(db)
    assert rec.writer is not None
    for _ in range(1500):  # a batch long enough to catch it while it is written
        sink.on_event(lw.InfoEvent(data={"k": ["x" * 50] * 50}))
    ev = ModelEvent(model="mock/m", input=[], pending=True)
    sink.on_event(ev)
    taken = rec.writer.batches_taken()
    while rec.writer.batches_taken() == taken:  # the thread took the batch
        time.sleep(0)  # noqa: ASYNC251 (the GIL to the writer; the loop held on purpose)
    msg = _unwritable()
    ev.output, ev.pending = lw.ModelOutput(message=msg), None  # as after_generate does
    sink.on_message(msg)
    sink.on_event(ev)
    with pytest.raises(lw.RunStoreError, match="serialize"):
        await rec.end(RunEnd(status="success"), failed=False, raise_errors=True)
    events = _readable_events(db)  # (it read back: no event refers to the lost message)
    assert sum(isinstance(e, lw.InfoEvent) for e in events) == 1500
    # the event is gone, or kept as written while still pending (serialised before it
    # completed, which the thread may do first)
    assert all(e.output is None for e in events if isinstance(e, ModelEvent))


async def test_an_event_completed_after_its_message_was_lost_is_not_written(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    rec, sink = await _opened(db)
    ev = ModelEvent(model="mock/m", input=[], pending=True)
    sink.on_event(ev)
    msg = _unwritable()
    sink.on_message(msg)
    assert rec.writer is not None
    await rec.writer._flushed()  # a batch: the pending event and the lost message
    ev.output, ev.pending = lw.ModelOutput(message=msg), None
    sink.on_event(ev)  # the next batch: the completed event, which refers to it
    with pytest.raises(lw.RunStoreError, match="serialize"):
        await rec.end(RunEnd(status="success"), failed=False, raise_errors=True)
    [kept] = _readable_events(db)  # as it was written: pending, referring to nothing
    assert isinstance(kept, ModelEvent) and kept.pending and kept.output is None


async def test_a_run_ending_on_its_own_error_keeps_it_and_lists_no_lost_message(
    tmp_path: Path,
) -> None:
    """``raise_on_limit``: the run ends ``limit`` and raises that: the store's loss is not
    raised, so the row says it, and does not list the final messages (one was lost)."""
    db = tmp_path / "runs.db"
    rec, _ = await _opened(db)
    assert rec.writer is not None
    ok, bad = lw.UserMessage(content="go"), _unwritable()
    rec.writer.message("run1", "", 0, ok)
    rec.writer.message("run1", "", 1, bad)
    end = RunEnd(status="limit", messages=json.dumps([ok.id, bad.id]), limit='{"type":"token"}')
    await rec.end(end, failed=False, raise_errors=False)
    [info] = lw.list_runs(db)
    assert info.status == "limit" and "serialize" in (info.error or "")
    with lw.load_run(info.id, db=db) as log:
        assert bad.id not in [m.id for m in log.messages()]


async def test_the_end_of_a_run_that_lost_a_row_reaches_its_file_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    rec, _ = await _opened(Path("runs.db"))
    assert rec.writer is not None
    rec.writer.message("run1", "", 0, _unwritable())
    monkeypatch.chdir(tmp_path / "b")  # (a tool of another run, say)
    with pytest.raises(lw.RunStoreError):
        await rec.end(RunEnd(status="success"), failed=False, raise_errors=True)
    with sqlite3.connect(tmp_path / "a" / "runs.db") as conn:
        [(status,)] = conn.execute("SELECT status FROM runs").fetchall()
    assert status == "error" and not (tmp_path / "b" / "runs.db").exists()


def test_a_path_through_a_link_and_dot_dot_writes_the_file_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    os.symlink(tmp_path / "real" / "sub", tmp_path / "cwd" / "link")
    monkeypatch.chdir(tmp_path / "cwd")
    writer = RunWriter("link/../runs.db")  # the system resolves it to real/runs.db
    writer.event("run", "", 0, lw.InfoEvent(data="x"))
    writer.close(10)
    assert (tmp_path / "real" / "runs.db").exists()
    assert not (tmp_path / "cwd" / "runs.db").exists()


class _Cfg:
    pass


async def test_metadata_holding_an_object_that_is_not_json_keeps_the_store_listable(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=["a"])
    await lw.run(lw.react(submit=False), "go", model=model, db=db, metadata={"cfg": _Cfg(), "n": 1})
    [info] = lw.list_runs(db)
    assert info.status == "success" and info.metadata["n"] == 1
    assert "_Cfg" in info.metadata["cfg"]  # (its repr, in its place)
    assert json.loads(json_text({"x": _Cfg(), "y": [1.5]}) or "")["y"] == [1.5]


async def test_a_config_float_that_is_not_finite_leaves_the_run_readable_by_sqlite(
    tmp_path: Path,
) -> None:
    from loopwright.log._pages import usage_totals
    from loopwright.log._resume_point import resume_point

    db = tmp_path / "runs.db"
    config = lw.GenerateConfig(timeout=float("inf"))  # "no timeout"
    model = lw.get_model("mock", outputs=["a"], config=config)
    await asyncio.wait_for(lw.run(lw.react(submit=False), "go", model=model, db=db), 30)
    [info] = lw.list_runs(db)
    assert resume_point(info.id, db).status == "success"
    with lw.load_run(info.id, db=db) as log:
        assert usage_totals(log)[0] == 1
        [event] = [e for e in log.events() if isinstance(e, ModelEvent)]
    assert event.config.timeout == float("inf")  # read back as it was
