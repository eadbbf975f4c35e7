"""A child forked while SQLite has a run store file locked for this process would see it
locked for good (SQLite keeps its locks' state per process, in memory the child
inherits): a fork waits for every such moment in flight, whatever connection it is on."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log import _approvals, _file_thread
from loopwright.log._writer import RunWriter

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")

_INSERT_RUN = "INSERT INTO runs (id, status, created) VALUES (?, 'running', 0)"


class Held:
    """A connection that holds SQLite's write lock a while at ``at`` (the statement
    ``COMMIT``, or ``close``), and says so by ``inside``."""

    def __init__(self, conn: sqlite3.Connection, at: str, inside: threading.Event) -> None:
        self.conn, self.at, self.inside = conn, at, inside

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == self.at == "COMMIT":
            self.inside.set()
            time.sleep(0.5)
        return self.conn.execute(sql, *args)

    def close(self) -> None:
        if self.at == "close":  # (SQLite's last close folds the log: a write lock)
            self.conn.execute("BEGIN IMMEDIATE")
            self.inside.set()
            time.sleep(0.5)
            self.conn.execute("COMMIT")
        self.conn.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def fork_and_write(db: Path) -> int:
    """Fork; the child writes a row of the store (with a short busy wait: the parent
    holds no lock by then). The child's exit status: 0 written, 2 "locked", 3 else."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # (a hang ends the child by SIGALRM, not the test run)
        code = 3
        try:
            conn = sqlite3.connect(db, timeout=2, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_INSERT_RUN, ("child",))
            conn.execute("COMMIT")
            conn.close()
            code = 0
        except sqlite3.OperationalError as ex:
            code = 2 if "locked" in str(ex) else 3
        except BaseException:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), status
    return os.WEXITSTATUS(status)


def test_a_fork_waits_for_a_file_closed_as_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file no run uses is closed by its thread after it left the table of open
    files: its close (SQLite's last fold) is waited for all the same."""
    inside = threading.Event()
    real = _file_thread.connect
    monkeypatch.setattr(_file_thread, "connect", lambda p: Held(real(p), "close", inside))
    db = tmp_path / "runs.db"
    writer = RunWriter(db)
    writer.execute(_INSERT_RUN, ("parent",))
    writer.close(10)
    _file_thread.close_idle_files(timeout=0)  # (its thread closes it now, unwaited)
    assert inside.wait(10)
    assert fork_and_write(db) == 0
    with sqlite3.connect(db) as conn:
        assert sorted(r[0] for r in conn.execute("SELECT id FROM runs")) == ["child", "parent"]


def test_a_fork_waits_for_a_transaction_of_another_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only the writer thread's: a deferred call recorded by a connection of its
    own, in another thread, is waited for too."""
    from loopwright.tools import PendingCall, arguments_hash

    inside = threading.Event()
    real = _approvals.connect
    monkeypatch.setattr(_approvals, "connect", lambda p: Held(real(p), "COMMIT", inside))
    db = tmp_path / "runs.db"
    call = lw.ToolCall(id="c1", function="bash", arguments={"cmd": "ls"})
    pending = PendingCall(call=call, arguments_hash=arguments_hash(call), approver="defer")
    recording = threading.Thread(target=_approvals.record_pending, args=(db, "r", [pending]))
    recording.start()
    try:
        assert inside.wait(10)
        assert fork_and_write(db) == 0
    finally:
        recording.join(10)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT call_id FROM approvals").fetchall() == [("c1",)]


def test_a_readers_close_waits_for_a_fork_under_way(tmp_path: Path) -> None:
    """Closing a reading connection, when it is the file's last, folds the log in (the
    file locked meanwhile): it is a section too, which does not begin while a fork is
    under way (here one held between its hooks)."""
    from loopwright.log import _fork
    from loopwright.log._db import connect

    db = tmp_path / "runs.db"
    connect(db).close()
    reader = connect(db, create=False)
    _fork._before_fork()  # (nothing in flight: it returns at once)
    closing = threading.Thread(target=reader.close)
    try:
        closing.start()
        for _ in range(1000):  # until the close waits for the fork
            with _fork._cond:
                if _fork._cond._waiters:  # type: ignore[attr-defined]
                    break
            time.sleep(0.01)
        else:
            pytest.fail("the close did not wait for the fork")
        assert reader.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # still open
    finally:
        _fork._after_fork_in_parent()
        closing.join(10)
    with pytest.raises(sqlite3.ProgrammingError):  # closed once the fork was over
        reader.execute("SELECT 1")


def test_a_fork_waits_for_other_threads_sections_not_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fork from inside a section (its thread's own, nested or not) does not wait for
    it; one from another thread waits until the section ends."""
    from loopwright.log import _fork

    monkeypatch.setattr(_fork, "FORK_WAIT", 3600.0)  # (a wrong wait hangs: the test's timeout)
    with _fork.file_locked(), _fork.file_locked():
        _fork._before_fork()  # its own sections: at once
        _fork._after_fork_in_parent()
        other = threading.Thread(target=_fork._before_fork)
        other.start()
        for _ in range(1000):  # until it waits for this thread's sections
            with _fork._cond:
                if _fork._cond._waiters:  # type: ignore[attr-defined]
                    break
            time.sleep(0.01)
        else:
            pytest.fail("the other thread's fork did not wait")
        assert other.is_alive()
    other.join(10)  # the sections ended: it forks
    assert not other.is_alive()
    _fork._after_fork_in_parent()
    with _fork._cond:
        assert (_fork._inside, _fork._forking) == (0, 0)
