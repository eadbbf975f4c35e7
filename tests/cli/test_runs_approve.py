"""``loopwright run --approval defer`` then ``loopwright runs approve ... --continue``:
three processes through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import loopwright as lw
from loopwright.log._approvals import deferred_calls

from ._cli import cli, script, shown_digest

TOOLS = """
import os
import loopwright as lw

def bash(cmd: str) -> str:
    '''Run a command (here: append it to effects.txt).

    Args:
        cmd: The command.
    '''
    with open(os.path.join(os.path.dirname(__file__), "effects.txt"), "a") as f:
        f.write(cmd + "\\n")
    return "ran " + cmd
"""


def test_a_cli_run_waits_then_runs_approve_continue_runs_the_call_once(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    effects, db = tmp_path / "effects.txt", tmp_path / "runs.db"
    first = script(tmp_path / "s1.json", [{"tool": "bash", "arguments": {"cmd": "make"}}, "done"])
    started = cli(
        "run", "build it", "--model", "mock", "-M", first, "--tool", "tools.py:bash",
        "--approval", "defer", "--no-submit", "--db", str(db), cwd=tmp_path,
    )  # fmt: skip
    assert started.code == 0, started.err  # waiting is no error
    assert "bash: waiting for approval" in started.err and "✗" not in started.err
    [info] = lw.list_runs(db)
    run_id = info.id
    assert f"waiting for approval: loopwright runs approve {run_id}" in started.err
    assert not effects.exists()
    assert lw.list_runs(db)[0].status == "waiting"
    # the continued run's model answers anew from its first live call
    rest = script(tmp_path / "s2.json", ["done"])
    listing = cli("runs", "approve", run_id, "--db", str(db), cwd=tmp_path)
    approved = cli(
        "runs", "approve", run_id, "--all", "--shown", shown_digest(listing), "--continue",
        "-M", rest, "--json",
        "--db", str(db), cwd=tmp_path,
    )  # fmt: skip
    assert approved.code == 0, approved.err
    assert "approved call" in approved.err
    assert json.loads(approved.out)["status"] == "answered"
    assert effects.read_text().splitlines() == ["make"]
    [info] = lw.list_runs(db)
    assert info.id == run_id and info.status == "success" and info.output == "done"


def test_runs_approve_hash_pins_the_decision_to_the_arguments_shown(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    db = tmp_path / "runs.db"
    first = script(tmp_path / "s1.json", [{"tool": "bash", "arguments": {"cmd": "make"}}, "done"])
    started = cli(
        "run", "build it", "--model", "mock", "-M", first, "--tool", "tools.py:bash",
        "--approval", "defer", "--no-submit", "--db", str(db), cwd=tmp_path,
    )  # fmt: skip
    assert started.code == 0, started.err
    run_id = lw.list_runs(db)[0].id
    shown = cli("runs", "approve", run_id, "--db", str(db), cwd=tmp_path, columns="1000")
    [call] = cli("runs", "approve", run_id, "--json", "--db", str(db), cwd=tmp_path).json()
    call_id, digest = call["call"]["id"], call["arguments_hash"]
    command = f"loopwright runs approve {run_id} --db {db}"  # (the store listed)
    assert f"approve it: {command} --approve {call_id}={digest}" in shown.out
    other = "0" * 64
    wrong = cli("runs", "approve", run_id, "--hash", f"{call_id}={other}", "--db", str(db),
                cwd=tmp_path)  # fmt: skip
    assert wrong.code != 0 and "other arguments" in wrong.err
    assert [c.state for c in lw.pending_calls(run_id, db=db)] == ["pending"]  # nothing recorded
    right = cli("runs", "approve", run_id, "--hash", f"{call_id}={digest.upper()}", "--db",
                str(db), cwd=tmp_path)  # fmt: skip
    assert right.code == 0, right.err
    assert "approved call" in right.out
    assert lw.pending_calls(run_id, db=db) == []
    [row] = deferred_calls(db, run_id)
    assert row.state == "decided" and row.decided_hash == digest
