"""What the run store's subscriber puts on the writer's queue, and how the writer folds
its file's log: an event completed while its first put is still queued is not put again
(its one row holds the completed event), and the log is folded beside the writing."""

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


async def test_the_log_is_folded_beside_the_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)
    folds: list[Path] = []
    folded = threading.Event()
    real_fold = _file_thread._fold

    def fold(conn: sqlite3.Connection, path: Path) -> None:
        real_fold(conn, path)
        folds.append(path)
        folded.set()

    monkeypatch.setattr(_file_thread, "_fold", fold)
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    for i in range(50):
        writer.event("run", "", i, lw.InfoEvent(data="x" * 2000))
    await writer.flush()
    assert folded.wait(10)
    assert folds == [db]
    # folded: a fresh connection reads every row from the file alone, the log emptied
    conn = sqlite3.connect(db)
    try:
        busy, frames, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    assert busy == 0 and frames == done
    assert len(rows(db)) == 50
    await writer.aclose()
    _file_thread.close_idle_files()
    assert not log_left(db)


def test_a_fold_that_fails_is_only_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="loopwright.log")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    assert _file_thread._folder(junk) is None  # cannot be read: raises nothing
    assert "cannot open a connection to fold the log" in caplog.text
    assert _file_thread._folder(tmp_path / "runs.db") is None  # removed meanwhile
    assert not (tmp_path / "runs.db").exists()  # not made again
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.close()
    _file_thread._fold(conn, junk)  # a fold that fails: logged
    assert "folding the log failed" in caplog.text


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


async def test_a_fold_waits_for_no_reader(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    writer.event("run", "", 0, lw.InfoEvent(data="first"))
    await writer.flush()
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        writer.event("run", "", 1, lw.InfoEvent(data="second"))
        await writer.flush()
        folder = _file_thread._folder(db)
        assert folder is not None
        thread = threading.Thread(target=_file_thread._fold, args=(folder, db))
        thread.start()
        thread.join(10)
        folder.close()
        assert not thread.is_alive()  # PASSIVE: it folded what it could and returned
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        reader.execute("COMMIT")
    finally:
        reader.close()
    await writer.aclose()
    assert [seq for seq, _, _ in rows(db)] == [0, 1]


async def test_a_store_named_in_bytes_that_are_not_utf8_folds_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)
    db = tmp_path / os.fsdecode(b"caf\xe9.db")
    writer = RunWriter(db)
    for i in range(20):
        writer.event("run", "", i, lw.InfoEvent(data="x" * 2000))
    await writer.flush()
    file = writer._file
    await writer.aclose()
    _file_thread.close_idle_files()
    assert file.folder is not None and file.foldable  # it was opened, from the name's bytes
    assert len(rows(db)) == 20


async def test_a_store_that_needs_no_fold_opens_no_second_connection(tmp_path: Path) -> None:
    """The fold's connection is opened at the first fold: a store of short runs holds
    the writer's file handles only (a process with many stores open at once)."""
    writer = RunWriter(tmp_path / "runs.db")
    writer.event("run", "", 0, lw.InfoEvent(data="x"))
    await writer.flush()
    assert writer._file.folder is None
    await writer.aclose()
