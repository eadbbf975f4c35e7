"""What the run store's subscriber puts on the writer's queue, and how the writer folds
its file's log: an event completed while its first put is still queued is not put again
(its one row holds the completed event), and the log is folded after the flushes
waiting were told."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import _file_thread
from loopwright.log._outcome import Sink
from loopwright.log._writer import RunWriter

from ._rows import event_rows as rows


def log_left(db: Path) -> bool:
    return os.path.exists(f"{db}-wal")


def hold_thread(writer: RunWriter) -> threading.Event:
    """Keep the file's thread busy (in a flush's wake) until the returned event is set:
    what is put meanwhile stays queued."""
    busy, release = threading.Event(), threading.Event()

    def wake() -> None:
        busy.set()
        release.wait(10)

    writer._put_flush(wake)
    assert busy.wait(10)
    return release


async def test_an_event_completed_while_still_queued_is_put_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    sink = Sink(writer, "run", "", itertools.count())
    queue = writer._file.queue
    release = hold_thread(writer)
    tool = lw.ToolEvent(call=lw.ToolCall(function="add", arguments={"a": 1}), pending=True)
    sink.on_event(tool)
    assert queue.qsize() == 1
    tool.pending, tool.duration = None, 1.5
    sink.on_event(tool)  # the writer took nothing meanwhile: its first put serves
    assert queue.qsize() == 1
    sink.on_event(tool)  # told again (not pending any more): put, as any event
    assert queue.qsize() == 2
    release.set()
    await writer.aclose()
    [(seq, id, data)] = rows(db)
    assert (seq, id) == (0, tool.id)
    assert json.loads(data)["duration"] == 1.5 and "pending" not in json.loads(data)


async def test_an_event_completed_after_the_writer_took_its_first_put_is_put_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    sink = Sink(writer, "run", "", itertools.count())
    tool = lw.ToolEvent(call=lw.ToolCall(function="add"), pending=True)
    sink.on_event(tool)
    await writer.flush()  # the writer took it (and wrote it pending)
    assert json.loads(rows(db)[0][2])["pending"] is True
    release = hold_thread(writer)
    tool.pending = None
    sink.on_event(tool)
    assert writer._file.queue.qsize() == 1
    release.set()
    await writer.aclose()
    [(_, id, data)] = rows(db)
    assert id == tool.id and "pending" not in json.loads(data)


async def test_a_run_writes_each_event_once_completed(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "3"}),
        ],
    )

    @lw.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: One.
            b: The other.
        """
        return a + b

    state = await lw.run(lw.react(tools=[add]), "Add 1 and 2.", model=model, db=db)
    assert state.completed == "submit"
    found = rows(db)
    kinds = [json.loads(data)["event"] for _, _, data in found]
    assert kinds.count("model") == 2 and kinds.count("tool") >= 1
    assert all('"pending":true' not in data for _, _, data in found)
    assert len({id for _, id, _ in found}) == len(found)


async def test_the_log_is_folded_after_the_flush_was_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)
    told = threading.Event()
    folds: list[bool] = []  # whether the flush had been told when the fold began
    real_fold = _file_thread._FileWriter._fold

    def fold(self: _file_thread._FileWriter, conn: sqlite3.Connection) -> None:
        folds.append(told.is_set())
        real_fold(self, conn)

    monkeypatch.setattr(_file_thread._FileWriter, "_fold", fold)
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    for i in range(50):
        writer.event("run", "", i, lw.InfoEvent(data="x" * 2000))
    writer._put_flush(told.set)
    writer.flush_sync(10)  # the thread takes it after the fold: the fold is done
    assert folds == [True]
    # folded: a fresh connection reads every row from the file alone, the log emptied
    conn = sqlite3.connect(db)
    try:
        busy, frames, folded = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    assert busy == 0 and frames == folded
    assert len(rows(db)) == 50
    await writer.aclose()
    _file_thread.close_idle_files()
    assert not log_left(db)


async def test_a_fold_is_of_the_file_written_not_of_one_put_at_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store moved away while a run writes keeps every row it was given: the log is
    folded by the connection that wrote it, not by one opened by the path (which would
    pair the file now there with the moved file's log)."""
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)
    db, moved = tmp_path / "runs.db", tmp_path / "moved.db"
    writer = RunWriter(db)
    writer.event("run", "", 0, lw.InfoEvent(data="before"))
    await writer.flush()
    os.replace(db, moved)
    other = sqlite3.connect(tmp_path / "other.db")  # another store (WAL), put at the path
    other.execute("PRAGMA journal_mode = WAL")
    other.execute("CREATE TABLE keep (x)")
    other.commit()
    other.close()
    os.replace(tmp_path / "other.db", db)
    for i in range(1, 30):
        writer.event("run", "", i, lw.InfoEvent(data="x" * 2000))
    await writer.flush()  # (folded after it)
    await writer.flush()
    await writer.aclose()
    _file_thread.close_idle_files()
    assert len(rows(moved)) == 30
    # the file at the path, read alone (SQLite pairs whatever log is at its name with
    # it: the moved file's, while that is open): still the other store, untouched
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert tables == {"keep"}


async def test_a_fold_waits_for_no_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    writer.event("run", "", 0, lw.InfoEvent(data="first"))
    await writer.flush()
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        writer.event("run", "", 1, lw.InfoEvent(data="second"))
        await writer.flush()  # folded after it, a reader in the way: PASSIVE returns
        await writer.flush()
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        reader.execute("COMMIT")
    finally:
        reader.close()
    await writer.aclose()
    assert [seq for seq, _, _ in rows(db)] == [0, 1]


def test_a_flush_cuts_a_fold_in_progress_short(tmp_path: Path) -> None:
    """cut_fold interrupts the statement of the connection folding (here a long query
    stands for the checkpoint), and nothing when no fold runs: a write is never cut."""
    writer = RunWriter(tmp_path / "runs.db")
    file = writer._file
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    errors: list[BaseException] = []
    started = threading.Event()

    def fold() -> None:
        file._folding = conn
        started.set()
        try:
            conn.execute(endless)
        except sqlite3.OperationalError as ex:
            errors.append(ex)

    thread = threading.Thread(target=fold)
    thread.start()
    started.wait(10)
    while not errors and thread.is_alive():
        file.cut_fold()
        thread.join(0.01)
    assert "interrupt" in str(errors[0])
    file._folding = None
    file.cut_fold()  # no fold: nothing is interrupted
    conn.execute("CREATE TABLE t (x)")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    conn.close()
    writer.close(10)


class _Interrupted:
    """A connection whose checkpoint a flush interrupted."""

    def execute(self, sql: str) -> None:
        raise sqlite3.OperationalError("interrupted")


def test_a_fold_cut_short_is_tried_again_after_the_next_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="loopwright.log")
    writer = RunWriter(tmp_path / "runs.db")
    file = writer._file
    file.wal_pages = 5000
    file._fold(_Interrupted())  # type: ignore[arg-type]
    assert file.wal_pages == 5000 and file._folding is None  # still due
    assert "folding the log failed" not in caplog.text  # not a failure
    writer.close(10)
