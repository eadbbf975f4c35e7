"""When the run store's writer takes a batch (it lets one gather, so that a short run is
one batch, written at its flush), and what it does for a file moved away meanwhile (its
log folded into it, never through the file now at its path)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import _file_thread
from loopwright.log._db import connect
from loopwright.log._writer import RunWriter

from ._rows import event_rows as rows


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


async def run_of(steps: int, db: Path) -> None:
    calls = [lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}) for i in range(steps)]
    model = lw.get_model("mock", outputs=[*calls, "done"])
    await lw.run(lw.react(tools=[add], submit=False), "go", model=model, db=db)


async def test_a_short_run_is_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer does not wake for the first row of a run that finds it idle: it lets
    the batch gather until the run's flush, so the run costs one batch (one commit) and
    no switch of threads while it works."""
    db = tmp_path / "runs.db"
    await run_of(1, db)  # opens the file (the first run waits for it)
    (file,) = [f for f in _file_thread._files.values() if f.path == db]
    for _ in range(3):
        await asyncio.sleep(3 * _file_thread.BATCH_WAIT)  # the writer idle: waiting for rows
        before = file.taken
        monkeypatch.setattr(_file_thread, "BATCH_WAIT", 5.0)  # longer than any run here
        await run_of(5, db)
        monkeypatch.undo()
        assert file.taken == before + 1
    assert [r.status for r in lw.list_runs(db)] == ["success"] * 4
    assert len(rows(db)) == 3 + 3 * 11  # a model and a tool event a step, and the answer


def other_store(path: Path, page_size: int) -> None:
    """Put another SQLite file (WAL mode, ``page_size`` bytes a page) at ``path``."""
    made = path.with_name("other.db")
    conn = sqlite3.connect(made)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE keep (x)")
    conn.commit()
    conn.close()
    os.replace(made, path)


def tables_alone(db: Path) -> set[str]:
    """The tables of the file at ``db``, read without any log."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


@pytest.mark.parametrize(("own", "other"), [(4096, 4096), (4096, 65536), (8192, 4096)])
async def test_a_store_moved_before_its_first_fold_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own: int, other: int
) -> None:
    """SQLite folds nothing into a file moved away when its last connection closes: the
    writer folds the log in itself before closing. It never opens the file now at the
    path to fold (SQLite would pair that file with this file's log: with another page
    size, it would take the log for a damaged one)."""
    monkeypatch.setattr(_file_thread, "CHECKPOINT_PAGES", 1)  # a fold after every batch
    db, moved = tmp_path / "runs.db", tmp_path / "moved.db"
    sqlite3.connect(db).execute(f"PRAGMA page_size = {own}").execute("VACUUM").connection.close()
    writer = RunWriter(db)  # (an empty file becomes a run store, of its page size)
    await writer.opened()  # (no rows: nothing folded yet)
    file = writer._file
    os.replace(db, moved)
    other_store(db, other)
    for i in range(30):
        writer.event("run", "", i, lw.InfoEvent(data="x" * 2000))
        if i % 10 == 9:
            await writer.flush()
    await writer.aclose()
    _file_thread.close_idle_files()
    assert file.folder is None  # no fold through the file at the path
    assert [seq for seq, _, _ in rows(moved)] == list(range(30))
    assert tables_alone(moved) >= {"events", "messages", "runs"}  # folded into it
    assert tables_alone(db) == {"keep"}  # the other file, untouched
    conn = sqlite3.connect(db)  # and read with the log at its name: still itself
    try:
        assert conn.execute("SELECT count(*) FROM keep").fetchone() == (0,)
    finally:
        conn.close()


async def test_a_flush_put_while_the_writer_works_is_not_kept_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush put while the thread is busy (writing, or answering another flush) is
    seen by the next batch: no gathering wait for it."""
    monkeypatch.setattr(_file_thread, "BATCH_WAIT", 30.0)
    writer = RunWriter(tmp_path / "runs.db")
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(10)

    writer._put_flush(hold)  # the thread busy in this flush's wake
    assert busy.wait(10)
    writer.event("run", "", 0, lw.InfoEvent(data="queued meanwhile"))
    done = threading.Event()
    writer._put_flush(done.set)
    release.set()
    assert done.wait(10)  # not BATCH_WAIT
    await writer.aclose()
    assert len(rows(tmp_path / "runs.db")) == 1


def moved_away(db: Path, moved: Path) -> None:
    """Move the store at ``db`` to ``moved``, and put another WAL store at ``db``."""
    os.replace(db, moved)
    other_store(db, 4096)


async def test_a_moved_store_closes_at_once_though_a_reader_holds_its_log(
    tmp_path: Path,
) -> None:
    """The fold at close does not wait for readers (SQLite would, 30 s): it folds in
    what it can and leaves the log as it is."""
    db, moved = tmp_path / "runs.db", tmp_path / "moved.db"
    writer = RunWriter(db)
    for i in range(5):
        writer.event("run", "", i, lw.InfoEvent(data=f"row {i}"))
    await writer.flush()
    file = writer._file
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM events").fetchone() == (5,)
        moved_away(db, moved)
        await writer.aclose()
        _file_thread.close_idle_files(timeout=20)
        assert not file.thread.is_alive()  # (the busy wait was 30 s)
    finally:
        reader.close()
    assert [seq for seq, _, _ in rows(moved)] == list(range(5))


async def test_a_moved_store_whose_writer_failed_still_gets_its_log(tmp_path: Path) -> None:
    """What was committed before a failure is folded into the moved file too: left in
    the log at the old name, it would be read as the other file's."""
    db, moved = tmp_path / "runs.db", tmp_path / "moved.db"
    writer = RunWriter(db)
    for i in range(10):
        writer.event("run", "", i, lw.InfoEvent(data=f"row {i}"))
    await writer.flush()
    moved_away(db, moved)
    writer.execute("INSERT INTO no_such_table VALUES (1)", ())  # the file fails
    with pytest.raises(lw.RunStoreError, match="no_such_table"):
        await writer.aclose()
    _file_thread.close_idle_files()
    assert [seq for seq, _, _ in rows(moved)] == list(range(10))
    assert tables_alone(moved) >= {"events"}
    conn = sqlite3.connect(db)  # the other file, read with the log at its name
    try:
        assert conn.execute("SELECT count(*) FROM keep").fetchone() == (0,)
    finally:
        conn.close()


async def test_a_store_replaced_while_idle_keeps_both_files_rows(tmp_path: Path) -> None:
    """A store moved away while its writer is idle, another run store put at its path,
    and a run at once: the old writer closes (folding its log into the moved file)
    before the new file is opened, as both find their log by the same name."""
    for attempt in range(10):  # (without the wait, rows were lost in some attempts)
        folder = tmp_path / str(attempt)
        folder.mkdir()
        db, moved, made = folder / "runs.db", folder / "moved.db", folder / "backup.db"
        first = RunWriter(db)
        for i in range(5):
            first.event("run", "", i, lw.InfoEvent(data=f"old {i}"))
        await first.aclose()  # idle now, its log not folded
        os.replace(db, moved)
        backup = connect(made)  # another run store, with rows of its own
        backup.execute(
            "INSERT INTO events (run_id, seq, id, sample, type, timestamp, data) "
            "VALUES ('backup', 50, 'b50', '', 'info', '', '{}')"
        )
        backup.close()
        os.replace(made, db)
        second = RunWriter(db)
        for i in range(100, 103):
            second.event("run2", "", i, lw.InfoEvent(data=f"new {i}"))
        await second.aclose()
        _file_thread.close_idle_files()
        assert [seq for seq, _, _ in rows(db)] == [50, 100, 101, 102]
        assert [seq for seq, _, _ in rows(moved)] == [0, 1, 2, 3, 4]
