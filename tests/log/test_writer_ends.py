"""A writer lets go of its file however its close ends, cancelled included; the end of a
run whose store failed is written as the writer writes every row."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log import _file_thread
from loopwright.log._outcome import RunEnd, json_text, mark_failed
from loopwright.log._recording import RunRecorder
from loopwright.log._writer import RunWriter
from loopwright.model._redact import learn_secrets

from ._full import cap_pages
from ._rows import event_rows

_INSERT_RUN = "INSERT INTO runs (id, status, created) VALUES (?, 'running', 0)"


def rows(db: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def file_bytes(db: Path) -> bytes:
    """The store and anything SQLite keeps beside it."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def remove_store(db: Path) -> None:
    for path in db.parent.glob(db.name + "*"):
        path.unlink()


async def test_a_cancelled_close_still_lets_go_of_the_file(tmp_path: Path) -> None:
    """A run cancelled while its writer closes (a timeout around the run, a second
    Ctrl-C) must not keep the file taken: else a file replaced at the path afterwards
    is never opened afresh, and the next run writes to the removed file (lost)."""
    db = tmp_path / "runs.db"
    first = RunWriter(db)
    first.event("run", "", 0, lw.InfoEvent(data="first"))
    closing = asyncio.ensure_future(first.aclose())
    await asyncio.sleep(0)  # it waits for its flush now
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    file = first._file
    assert file.users == 0 and first not in file.writers
    assert file.connected.wait(10)  # what was queued is still written
    [(_, _, data)] = event_rows(db)
    assert '"first"' in data
    remove_store(db)  # the store is removed and made anew at the same path
    second = RunWriter(db)
    assert second._file is not file
    second.event("run2", "", 0, lw.InfoEvent(data="second"))
    await second.aclose()
    [(_, _, data)] = event_rows(db)
    assert '"second"' in data
    file.thread.join(10)  # the first file's thread ended (its file was replaced)
    assert not file.thread.is_alive()


async def test_the_end_of_a_run_whose_store_failed_is_written_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the file's writer failed (here SQLite's own SQLITE_FULL, a page cap on its
    connection), the run's end is written on a connection of its own: with the secrets
    learnt redacted, as every other row, and an error text that is not UTF-8 written
    (not raised as a UnicodeEncodeError out of the run's end)."""
    secret = "sk-endrow-4f1c2a9e77b3d0secret"
    learn_secrets([secret])
    cap_pages(monkeypatch)
    db = tmp_path / "runs.db"
    recorder = RunRecorder(db, "run")
    await recorder.open(name="n", model=None, input="go", metadata={}, store_id="s")
    assert recorder.writer is not None
    recorder.writer.event("run", "", 0, lw.InfoEvent(data="y" * 100_000))
    with pytest.raises(lw.RunStoreError, match="full"):
        await recorder.flush()
    end = RunEnd(
        status="error",
        output=json_text({"answer": f"the key is {secret}"}),
        error="cannot open 'caf\udce9.txt'",
    )
    await recorder.end(end, failed=True, raise_errors=False)
    [(status, output, error)] = rows(db, "SELECT status, output, error FROM runs")
    assert status == "error"
    assert json.loads(output) == {"answer": "the key is [redacted]"}
    assert error == "cannot open 'caf\\udce9.txt'"
    assert secret.encode() not in file_bytes(db)


async def test_a_run_with_a_float_that_is_not_finite_in_its_values_fails_no_run(
    tmp_path: Path,
) -> None:
    """NaN or Infinity in a run's metadata, input or a sample's scores is written as
    null: SQLite's JSON functions refuse them, and the run's end (``json_set`` on its
    metadata) failed the file's writer, stopping every run writing to the file."""
    db = tmp_path / "runs.db"
    inside, done = asyncio.Event(), asyncio.Event()

    @lw.tool
    async def wait_a_while() -> str:
        """Wait for the other run."""
        inside.set()
        await done.wait()
        return "waited"

    async def plain() -> lw.AgentState:
        model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("wait_a_while"), "b"])
        agent = lw.react(tools=[wait_a_while], submit=False)
        return await lw.run(agent, "plain", model=model, db=db, name="plain")

    async def odd() -> lw.AgentState:
        await inside.wait()  # the plain run is writing to the file
        try:
            model = lw.get_model("mock", outputs=["a"])
            metadata = {"x": float("nan"), "y": [float("inf"), 1.5]}
            return await lw.run(
                lw.react(submit=False), "odd", model=model, db=db, name="odd", metadata=metadata
            )
        finally:
            done.set()

    await asyncio.gather(plain(), odd())
    runs = {r.name: r for r in lw.list_runs(db)}
    assert {name: r.status for name, r in runs.items()} == {"plain": "success", "odd": "success"}
    assert runs["odd"].metadata["x"] is None and runs["odd"].metadata["y"] == [None, 1.5]
    [(valid,)] = rows(db, "SELECT json_valid(metadata) FROM runs WHERE name = 'odd'")
    assert valid == 1


async def test_an_info_event_with_a_float_that_is_not_finite_leaves_the_run_resumable(
    tmp_path: Path,
) -> None:
    """A tool's info event holding NaN (a score of nothing) is written with null there,
    as a call's arguments are: written ``NaN``, the row made SQLite's ``json_extract``
    fail, and with it reading where the run stopped (``runs resume``)."""
    from loopwright.log._resume_point import resume_point

    db = tmp_path / "runs.db"

    @lw.tool
    def measure() -> str:
        """Measure."""
        lw.transcript().info({"score": float("nan"), "top": [float("-inf"), 2.5]})
        return "measured"

    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("measure"), "done"])
    await lw.run(lw.react(tools=[measure], submit=False), "go", model=model, db=db)
    [info] = lw.list_runs(db)
    [(valid,)] = rows(db, "SELECT json_valid(data) FROM events WHERE type = 'info'")
    assert valid == 1
    with lw.load_run(info.id, db=db) as log:
        [event] = [e for e in log.events() if isinstance(e, lw.InfoEvent)]
    assert event.data == {"score": None, "top": [None, 2.5]}
    assert resume_point(info.id, db).run_id == info.id


def test_a_relative_path_names_the_file_in_the_folder_the_run_opened_it_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's thread opens the file a moment after the run asked for it: a working
    directory changed meanwhile (by a tool of another run, say) must not send the run's
    rows to a file of the same name in another folder."""
    opened_in, elsewhere = tmp_path / "a", tmp_path / "b"
    opened_in.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(opened_in)
    real_connect = _file_thread.connect

    def after_a_chdir(path: str | Path) -> object:
        os.chdir(elsewhere)  # before the thread opens the file
        return real_connect(path)

    monkeypatch.setattr(_file_thread, "connect", after_a_chdir)
    writer = RunWriter("runs.db")
    writer.event("run", "", 0, lw.InfoEvent(data="here"))
    writer.close()
    assert not (elsewhere / "runs.db").exists()
    [(_, _, data)] = event_rows(opened_in / "runs.db")
    assert '"here"' in data


async def test_a_run_that_loses_a_row_ends_readable_and_as_that_error(tmp_path: Path) -> None:
    """A run whose row cannot be written (a value that slipped past validation, here in
    a call's arguments) is told, but it may end before the news reaches it: its later
    rows, its end included, must not be written as if nothing happened (its row said
    ``success``, and its events referred to the message that was not written, so it
    could not be read back). Its rows stop at the loss; its end is that error."""
    db = tmp_path / "runs.db"

    @lw.tool
    def take(value: str) -> str:
        """Take a value.

        Args:
            value: The value.
        """
        return "taken"

    model = lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("take", {"value": object()}), "done"]
    )
    with pytest.raises(lw.RunStoreError, match="serialize"):
        await lw.run(lw.react(tools=[take], submit=False), "go", model=model, db=db)
    [info] = lw.list_runs(db)
    assert info.status == "error" and "serialize" in (info.error or "")
    with lw.load_run(info.id, db=db) as log:
        events = list(log.events())
        messages = list(log.messages())
    assert not any(isinstance(e, lw.ToolEvent) for e in events)
    assert "assistant" not in [m.role for m in messages]


def test_the_end_of_a_failed_run_makes_no_file_where_the_store_is_gone(tmp_path: Path) -> None:
    gone = tmp_path / "gone.db"
    mark_failed(gone, "UPDATE runs SET status = ? WHERE id = ?", ("error", "r"))
    assert not gone.exists()  # (SQLite makes a missing file when asked to open it)
    there = tmp_path / "there.db"
    with contextlib.closing(sqlite3.connect(there)) as conn:
        conn.execute("CREATE TABLE runs (id TEXT, status TEXT)")
        conn.execute("INSERT INTO runs VALUES ('r', 'running')")
        conn.commit()
    mark_failed(there, "UPDATE runs SET status = ? WHERE id = ?", ("error", "r"))
    with contextlib.closing(sqlite3.connect(there)) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("error",)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_writer_closed_in_a_forked_child_returns(tmp_path: Path) -> None:
    """In a child forked while a run records, its writers have no thread to write: each
    way of closing or flushing returns at once, and says so when rows were not written."""
    writers = [RunWriter(tmp_path / "runs.db") for _ in range(4)]
    writers[0].flush_sync(10)
    pid = os.fork()
    if pid == 0:  # the child: the file's thread is the parent's, not here
        signal.alarm(20)  # (a hang ends the child by SIGALRM, not the test run)
        code = 0
        try:
            writers[0].close()  # nothing put: nothing lost
            for i, close in enumerate(
                [
                    lambda w: w.close(),
                    lambda w: asyncio.run(w.aclose()),
                    lambda w: asyncio.run(w.flush()),
                ],
                start=1,
            ):
                writers[i].event("run", "", i, lw.InfoEvent(data="x"))
                try:
                    close(writers[i])
                    code = 10 + i  # (returned, but said nothing of the row lost)
                except lw.RunStoreError as ex:
                    if "thread has ended" not in str(ex):
                        code = 20 + i
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    for writer in writers:
        writer.close(10)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_during_a_commit_can_write_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite keeps its locks' state per process, in memory a child inherits: a child
    forked while the parent's writer was inside a transaction saw the file locked for
    good ("database is locked"). A fork now waits for the transaction to end."""
    in_commit = threading.Event()
    slow = [True]

    class SlowCommit:  # the writer's connection, its commits held open a while
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "COMMIT" and slow[0]:
                in_commit.set()
                time.sleep(0.5)
            return self.conn.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.conn, name)

    real_write = _file_thread._FileWriter._write

    def write(self: Any, conn: sqlite3.Connection, batch: Any, wakes: Any) -> bool:
        return real_write(self, SlowCommit(conn), batch, wakes)  # type: ignore[arg-type]

    monkeypatch.setattr(_file_thread._FileWriter, "_write", write)
    db = tmp_path / "runs.db"
    parent = RunWriter(db)
    parent.execute(_INSERT_RUN, ("parent",))
    assert in_commit.wait(10)  # the parent's writer is committing: fork now
    pid = os.fork()
    if pid == 0:
        signal.alarm(30)
        code = 0
        try:
            slow[0] = False
            child = RunWriter(db)
            child.execute(_INSERT_RUN, ("child",))
            child.close(20)
        except lw.RunStoreError as ex:
            code = 2 if "locked" in str(ex) else 3
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    parent.close(10)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    with contextlib.closing(sqlite3.connect(db)) as conn:
        ids = sorted(r[0] for r in conn.execute("SELECT id FROM runs"))
    assert ids == ["child", "parent"]
