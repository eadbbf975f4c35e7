"""A run id is read from the run store, which is untrusted (a file from another machine,
hand-edited): ``runs show``, ``runs diff`` and ``runs replay`` print it with its
escape sequences made visible, as every other text from the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import loopwright as lw
from loopwright.log._file_thread import close_idle_files
from tests.cli._cli import cli, shown_digest
from tests.cli.test_runs_replay import agent_file

EVIL = "\x1b]0;owned\x07\x1b[2J\r\x9b"


def hostile_run(tmp_path: Path) -> tuple[Path, str, str]:
    """A recorded run whose id is made to hold escape sequences; returns (the store,
    the agent's spec, a prefix of the id)."""
    db = tmp_path / "runs.db"
    spec = agent_file(tmp_path, "You add.")
    from loopwright._imports import import_file

    agent = import_file(Path(spec.rpartition(":")[0]), "test_hostile_ids_agent_").agent
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "3"}),
        ],
    )
    state = lw.run_sync(agent, "1+2?", model=model, db=db)
    close_idle_files()
    conn = sqlite3.connect(db)
    with conn:
        new = f"{state.run_id}{EVIL}"
        conn.execute("UPDATE runs SET id = ? WHERE id = ?", (new, state.run_id))
        for table in ("events", "messages", "tool_sets", "samples"):
            conn.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (new, state.run_id))
    conn.close()
    assert state.run_id is not None
    return db, spec, state.run_id


def assert_safe(text: str) -> None:
    for raw in ("\x1b", "\x07", "\r", "\x9b"):
        assert raw not in text, repr(text)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\r\\x9b" in text, text


def test_a_run_id_from_the_store_is_printed_safe(tmp_path: Path) -> None:
    db, spec, prefix = hostile_run(tmp_path)
    show = cli("runs", "show", prefix, cwd=tmp_path, db=db)
    assert show.code == 0, show.err
    assert_safe(show.out)
    diff = cli("runs", "diff", prefix, prefix, cwd=tmp_path, db=db)
    assert diff.code == 0, diff.err
    assert_safe(diff.out)
    replay = cli("runs", "replay", prefix, "--agent", spec, cwd=tmp_path, db=db)
    assert replay.code == 0, replay.err
    assert_safe(replay.out)


def test_a_deferred_call_s_hash_from_the_store_is_printed_safe(tmp_path: Path) -> None:
    """``runs approve RUN`` and ``runs show RUN`` list the calls a waiting run deferred,
    with the hash of their arguments: the hash is the store's too."""
    from loopwright.log._approvals import _TABLE

    db, _, prefix = hostile_run(tmp_path)
    call = lw.ToolCall(id="c1", function="add", arguments={"a": 1, "b": 2})
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET status = 'waiting'")
        conn.execute(_TABLE)
        conn.execute(
            "INSERT INTO approvals (run_id, call_id, tool, call, arguments_hash, state, created) "
            "SELECT id, 'c1', 'add', ?, ?, 'pending', 0 FROM runs",
            (call.model_dump_json(), f"abc{EVIL}"),
        )
    conn.close()
    for args in (("runs", "approve", prefix), ("runs", "show", prefix)):
        shown = cli(*args, cwd=tmp_path, db=db)
        assert shown.code == 0, shown.err
        assert "c1" in shown.out
        assert_safe(shown.out)
    listing = cli("runs", "approve", prefix, cwd=tmp_path, db=db)
    # (not the hash of the call shown: no approval is recorded for it, a rejection is)
    refused = cli("runs", "approve", prefix, "--all", "--shown", shown_digest(listing),
                  cwd=tmp_path, db=db)  # fmt: skip
    assert refused.code == 1 and "not the hash of the arguments it shows" in refused.err
    decided = cli("runs", "approve", prefix, "--reject", "c1", cwd=tmp_path, db=db)
    assert decided.code == 0, decided.err
    assert "rejected call c1" in decided.out and "arguments hash abc\\x1b]0;owned" in decided.out
    assert not any(raw in decided.out for raw in ("\x1b", "\x07", "\r", "\x9b")), decided.out
