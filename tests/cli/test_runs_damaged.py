"""``loopwright runs list`` over a run store with a damaged row: the other runs are
listed, the damaged one with why, all of it (read from the store: untrusted) with its
escape sequences made visible."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import loopwright as lw
from loopwright.log._file_thread import close_idle_files
from tests.cli._cli import cli
from tests.cli.test_runs_hostile_ids import EVIL

SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\r\\x9b"  # EVIL, made visible


def store(tmp_path: Path) -> tuple[Path, str, str]:
    """Two runs, the older one damaged (its id, name and created hold escape sequences;
    its created is not a time); (the store, the good id, the damaged id)."""
    db = tmp_path / "runs.db"
    ids = []
    for name in ("old", "new"):
        state = lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=db,
                            name=name)  # fmt: skip
        ids.append(str(state.run_id))
    close_idle_files()
    bad = ids[0] + EVIL
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "UPDATE runs SET id = ?, name = ?, created = ? WHERE id = ?",
            (bad, "old" + EVIL, EVIL, ids[0]),
        )
    conn.close()
    return db, ids[1], bad


def test_runs_list_shows_a_damaged_row_escaped_and_the_others(tmp_path: Path) -> None:
    db, good, bad = store(tmp_path)
    r = cli("runs", "list", cwd=tmp_path, db=db)
    assert r.code == 0, r.err
    for raw in ("\x1b", "\x07", "\r", "\x9b"):
        assert raw not in r.out, repr(r.out)
    lines = r.out.splitlines()
    [new] = [line for line in lines if good in line]
    assert "success" in new and "Default output from the mock model." in new
    [old] = [line for line in lines if bad[:20] in line]
    assert "damaged" in old and f"old{SHOWN}" in old
    assert f"{bad[:20]}{SHOWN}" in old  # its id, made visible
    assert "its created: a time that is not a number:" in old  # why (the rest wrapped)
    assert "'\\x1b]0;owned" in r.out.split(bad[:20], 1)[1]
    assert " ? " in old  # (its created is not known)
    # --status damaged lists it alone; --json says it all, as JSON escapes it
    only = cli("runs", "list", "--status", "damaged", "--json", cwd=tmp_path, db=db)
    assert only.code == 0, only.err
    [info] = only.json()
    assert info["id"] == bad and info["status"] == "damaged" and info["name"] == "old" + EVIL
    assert info["error"].startswith("its created: a time that is not a number:")
    assert info["created"] == "1970-01-01T00:00:00Z"
    success = cli("runs", "list", "--status", "success", "--json", cwd=tmp_path, db=db)
    assert [r["id"] for r in success.json()] == [good]
    # the run itself: one clear error, still
    show = cli("runs", "show", bad[:20], cwd=tmp_path, db=db)
    assert show.code != 0 and "its created" in show.err and "\x1b" not in show.err
