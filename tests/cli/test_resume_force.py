"""``--force`` reaches an eval's resume: samples taken by a resume on another machine
are refused without it, taken with it (``runs resume`` and ``eval --resume``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import loopwright as lw
from loopwright.log._claims import CLAIM_KEY

from ._cli import cli
from .test_runs_resume import TASKS, _kill_when, _start


def test_force_takes_samples_taken_on_another_machine(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    (tmp_path / "tasks.py").write_text(TASKS)
    proc = _start(["eval", "tasks.py@busy", "-T", "n=2", "--max-samples", "2"], tmp_path, db)
    _kill_when(proc, side, 4, "start")  # each sample's second call in flight
    [first] = lw.list_runs(db)
    with sqlite3.connect(db) as conn:  # a resume on another machine took them
        conn.execute(
            f"UPDATE samples SET metadata = json_set(metadata, '$.{CLAIM_KEY}', "
            "json_object('host', 'another-host.invalid', 'pid', 1))"
        )
    conn.close()
    for args in (["runs", "resume", first.id], ["eval", "tasks.py@busy", "--resume", first.id]):
        r = cli(*args, cwd=tmp_path, db=db)
        assert r.code != 0 and "another machine" in r.err, (r.code, r.err)
    assert len(lw.list_runs(db)) == 1
    r = cli("runs", "resume", first.id, "--force", "--json", cwd=tmp_path, db=db)
    assert r.code == 0, r.err
    [task] = json.loads(r.out)["tasks"]
    assert task["completed"] == 2 and task["resumed_from"] == first.id
    lines = side.read_text().splitlines()
    for q in ("q0", "q1"):  # the call in flight ran again once
        assert lines.count(f"start {q}") == 3 and lines.count(f"end {q}") == 2
