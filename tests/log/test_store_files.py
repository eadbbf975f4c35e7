"""A run store on a read-only disk can be read; a damaged or foreign file gives one clear
error (RunStoreError, one line, naming the file) from every reading and writing entry."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._file_thread import close_idle_files

from ._scripted import script


def record(db: Path, steps: int, name: str = "run") -> lw.AgentState:
    model = lw.get_model("mock", outputs=script(steps))
    from ._scripted import add

    agent = lw.react(tools=[add], submit=False, max_steps=steps + 1)
    try:
        return lw.run_sync(agent, "count", model=model, db=db, name=name)
    finally:
        close_idle_files()  # as the process's end would: a file at rest, WAL folded in


def read_everything(db: Path) -> int:
    """What `runs list` and `runs show` read: every run, its samples, messages, events."""
    n = 0
    for info in lw.list_runs(db):
        with lw.load_run(info.id, db=db) as log:
            log.info  # noqa: B018
            log.samples  # noqa: B018
            n += len(log.messages())
            n += len(list(log.events()))
            log.store()
    with lw.load_run(None, db=db) as log:
        log.info  # noqa: B018
    return n


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs of our own, to remount read-only (root ignores file modes)."""
    where = tmp_path / "mnt"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount_ro(where: Path) -> None:
    close_idle_files()  # this process's open run store files (kept for its next run)
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    with pytest.raises(OSError):
        (where / "probe").write_text("x")


def test_a_store_on_a_read_only_disk_can_be_read(mount: Path) -> None:
    db = mount / "runs.db"
    state = record(db, 5)
    assert sorted(os.listdir(mount)) == ["runs.db"]  # closed cleanly: no -wal, no -shm
    remount_ro(mount)
    [info] = lw.list_runs(db)
    assert info.status == "success"
    with lw.load_run(info.id, db=db) as log:
        assert [m.id for m in log.messages()] == [m.id for m in state.messages]
        assert sum(isinstance(e, lw.ModelEvent) for e in log.events()) == 5
    assert read_everything(db) > 0
    assert sorted(os.listdir(mount)) == ["runs.db"]  # nothing was written
    # writing there is refused in one line naming the file
    with pytest.raises(lw.RunStoreError) as caught:
        record(db, 2)
    assert str(db) in str(caught.value) and "\n" not in str(caught.value)


def test_a_read_only_store_whose_writer_died_is_read_with_its_log(mount: Path) -> None:
    """A writer killed mid-run leaves -wal and -shm: the runs in the log are read too."""
    live = mount / "live"
    live.mkdir()
    record(live / "runs.db", 3, name="first")
    holder = sqlite3.connect(live / "runs.db")  # keeps the log from being folded in
    holder.execute("SELECT 1 FROM runs").fetchall()
    record(live / "runs.db", 3, name="second")
    copy = mount / "copy"
    copy.mkdir()
    for f in os.listdir(live):
        shutil.copy(live / f, copy / f)
    holder.close()
    assert sorted(os.listdir(copy)) == ["runs.db", "runs.db-shm", "runs.db-wal"]
    remount_ro(mount)
    names = [r.name for r in lw.list_runs(copy / "runs.db")]
    assert names == ["second", "first"]
    assert read_everything(copy / "runs.db") > 0


def _random_bytes(db: Path) -> None:
    db.write_bytes(random.Random(1).randbytes(64 * 1024))


def _truncated(db: Path) -> None:
    record(db, 40)
    size = db.stat().st_size
    with db.open("r+b") as f:
        f.truncate(size // 2)


def _other_tables(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()


def _garbage_pages(db: Path) -> None:
    record(db, 40)
    data = bytearray(db.read_bytes())
    rng = random.Random(2)
    for page in range(2, len(data) // 4096):  # every page but the first: the schema reads
        at = page * 4096 + rng.randrange(4096 - 64)
        data[at : at + 64] = rng.randbytes(64)
    db.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage", [_random_bytes, _truncated, _other_tables, _garbage_pages], ids=lambda f: f.__name__
)
def test_a_damaged_or_foreign_file_gives_one_clear_error_everywhere(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    db = tmp_path / "runs.db"
    damage(db)
    before = db.read_bytes()
    errors: list[lw.RunStoreError] = []
    with pytest.raises(lw.RunStoreError) as caught:
        read_everything(db)
    errors.append(caught.value)
    try:
        record(db, 3)
    except lw.RunStoreError as ex:
        errors.append(ex)
    else:  # SQLite finds damage only in the pages it reads: a new run may not touch them
        assert damage is _garbage_pages
    for error in errors:
        message = str(error)
        assert str(db) in message, message
        assert "\n" not in message, message
    if damage is _other_tables:
        assert db.read_bytes() == before  # a file that is not a run store is left alone


def test_a_run_refused_by_its_store_prints_no_traceback(tmp_path: Path) -> None:
    """The error is raised once; nothing is logged beside it (a 20-line traceback used to
    be printed before the message)."""
    import sys

    db = tmp_path / "runs.db"
    _random_bytes(db)
    code = (
        "import loopwright as lw\n"
        "try:\n"
        "    lw.run_sync(lw.react(), 'hi', model=lw.get_model('mock', outputs=['x']),"
        f" db={str(db)!r})\n"
        "except lw.RunStoreError as ex:\n"
        "    print(ex)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and str(db) in done.stdout
    assert done.stderr == ""


def test_another_user_can_read_a_store_in_a_folder_they_cannot_write(tmp_path: Path) -> None:
    """A shared store (a folder of mode 0555, a file of 0444) read by a user who may not
    write there: the listing and the run's conversation, with nothing written."""
    import sys
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("needs root, to become another user")
    shared = Path(tempfile.mkdtemp(prefix="lw-shared-"))
    try:
        db = shared / "runs.db"
        record(db, 3, name="shared")
        shared.chmod(0o555)
        db.chmod(0o444)
        # the interpreter may live where the other user cannot reach (/root): start as
        # root, read once to load every module, then become "nobody" and read again
        code = (
            "import os, sys, loopwright as lw\n"
            "def read(db):\n"
            "    [info] = lw.list_runs(db)\n"
            "    with lw.load_run(info.id, db=db) as log:\n"
            "        return info.name, info.status, len(log.messages())\n"
            "read(sys.argv[2])\n"
            "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
            "print(*read(sys.argv[1]))\n"
        )
        warm = tmp_path / "warm.db"
        record(warm, 2)
        done = subprocess.run(
            [sys.executable, "-c", code, str(db), str(warm)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["shared", "success", "6"]  # 3 steps
        assert sorted(os.listdir(shared)) == ["runs.db"]
    finally:
        shared.chmod(0o755)
        shutil.rmtree(shared)
