"""What a person approves is what runs: the run store keeps a deferred call twice (the
call as the ``approvals`` row shows it, and the hash a decision is checked against),
and the continued run runs the call of the run's messages. A decision is recorded
only for a call whose arguments shown are those of the hash it is bound to: a store
edited so that the row shows a harmless command over the hash of another (a file from
another machine, hand-edited) gets no approval. Real run store, real processes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log._approvals import deferred_calls

from ..cli._cli import cli, shown_digest
from .test_deferred import agent_process


def shown_ls(db: Path, run_id: str) -> None:
    """Make the row of the run's deferred call show ``ls`` (its hash left alone)."""
    conn = sqlite3.connect(db)
    with conn:
        [(call,)] = conn.execute("SELECT call FROM approvals WHERE run_id = ?", (run_id,))
        data = json.loads(call)
        data["arguments"] = {"cmd": "ls"}
        conn.execute("UPDATE approvals SET call = ? WHERE run_id = ?", (json.dumps(data), run_id))
    conn.close()


def test_a_call_shown_with_another_call_s_hash_is_not_approved(tmp_path: Path) -> None:
    db, effects = tmp_path / "runs.db", tmp_path / "effects.txt"
    run_id = agent_process("start", db, effects, "rm -rf ~")["run_id"]
    shown_ls(db, run_id)
    listing = cli("runs", "approve", run_id, cwd=tmp_path, db=db)
    assert '"cmd": "ls"' in listing.out and "rm -rf" not in listing.out  # what is shown
    [call] = deferred_calls(db, run_id)
    for args in (
        ("--approve", f"{call.call_id}={call.arguments_hash}"),
        ("--all", "--shown", shown_digest(listing)),
    ):
        refused = cli("runs", "approve", run_id, *args, cwd=tmp_path, db=db)
        assert refused.code == 1, refused.err
        assert "not the hash of the arguments it shows" in refused.err
    with pytest.raises(lw.ApprovalRefused, match="not the hash of the arguments it shows"):
        lw.approve(run_id, approve=[call], db=db)
    assert [c.state for c in deferred_calls(db, run_id)] == ["pending"]
    agent_process("continue", db, effects, run_id)
    assert not effects.exists()  # nothing ran: the call waits again
