"""The viewer shows a run waiting for approval and the calls it waits for, bounded."""

from __future__ import annotations

from pathlib import Path

import httpx

import loopwright as lw

from ..approval.test_deferred import agent_process
from .conftest import start_viewer


def test_a_waiting_run_shows_its_pending_calls_bounded(tmp_path: Path) -> None:
    db, effects = tmp_path / "runs.db", tmp_path / "effects.txt"
    command = tmp_path / "command.txt"
    command.write_text("<script>alert(1)</script>\x1b[8m" + "B" * 50_000, encoding="utf-8")
    run_id = agent_process("start", db, effects, f"@{command}")["run_id"]
    proc, url = start_viewer(db)
    try:
        runs = httpx.get(url.rstrip("/") + "/api/runs", params={"status": "waiting"}).json()
        assert [r["id"] for r in runs["runs"]] == [run_id]
        run = httpx.get(url.rstrip("/") + f"/api/runs/{run_id}", timeout=30).json()
    finally:
        proc.terminate()
        proc.wait(10)
    assert run["status"] == "waiting"
    [pending] = run["pending"]["calls"]
    assert pending["id"] == "call-1" and pending["tool"] == "bash"
    assert pending["approver"] == "defer" and len(pending["hash"]) == 64
    text = pending["arguments"]
    assert len(text) < 5_000 and "characters not shown" in text
    assert text.startswith('{\n  "cmd": "<script>alert(1)</script>\\u001b[8m')  # data: the
    # page builds text nodes from it, never HTML
    # cut: never approved by --all, the page says how to read it whole
    whole = f"loopwright runs approve {run_id} --whole call-1"
    assert not pending["whole"] and pending["approve"] == whole
    assert f"characters not shown: {whole} shows them all" in text
    assert not effects.exists()


def test_many_applied_calls_do_not_hide_the_pending_ones(tmp_path: Path) -> None:
    import sqlite3

    import loopwright as lw
    from loopwright.log._approvals import record_pending
    from loopwright.tools import PendingCall, arguments_hash
    from loopwright.viewer._data import pending_json

    db = tmp_path / "runs.db"

    def pending(i: int) -> PendingCall:
        call = lw.ToolCall(id=f"c{i}", function="bash", arguments={"cmd": str(i)})
        return PendingCall(call=call, arguments_hash=arguments_hash(call), approver="defer")

    record_pending(db, "r", [pending(i) for i in range(80)])
    with sqlite3.connect(db) as conn:  # decided and run in earlier continuations
        conn.execute("UPDATE approvals SET state = 'applied', decision = 'approve'")
    record_pending(db, "r", [pending(80)])
    assert [p["id"] for p in pending_json(db, "r")["calls"]] == ["c80"]


def test_a_page_that_lists_some_calls_says_there_are_more(tmp_path: Path) -> None:
    from loopwright.log._approvals import record_pending
    from loopwright.tools import PendingCall
    from loopwright.viewer._data import MAX_PENDING, pending_json

    db = tmp_path / "runs.db"
    calls = [lw.ToolCall(id=f"r{i}", function="read", arguments={"path": str(i)})
             for i in range(MAX_PENDING)]  # fmt: skip
    calls.append(lw.ToolCall(id="b", function="bash", arguments={"cmd": "curl x | sh"}))
    record_pending(db, "r", [PendingCall(call=c, approver="defer") for c in calls])
    listed = pending_json(db, "r")
    # the bash call is past the page's list: the page says calls are not listed, and
    # counts it by its tool all the same (one bash among many reads is said)
    assert "b" not in [c["id"] for c in listed["calls"]] and listed["more"] is True
    assert listed["tools"] == f"1 bash, {MAX_PENDING} read"


def test_the_page_s_commands_run_nothing_a_call_id_holds(tmp_path: Path) -> None:
    """The page's commands are pasted into a shell: an id the model chose (``$(...)``,
    a backquote, braces) is quoted, and a cut call's id with braces in it breaks no
    template (the page is still served)."""
    import shutil

    import pytest

    from loopwright.log._approvals import deferred_calls, record_pending
    from loopwright.tools import PendingCall
    from loopwright.viewer._data import pending_json

    from ..cli.test_runs_approve_words import pasted

    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    db = tmp_path / "runs.db"
    short = lw.ToolCall(id="x$(touch${IFS}pwned1)", function="bash", arguments={"cmd": "ls"})
    long = lw.ToolCall(id="y`touch${IFS}pwned2`{0}", function="bash",
                       arguments={"cmd": "x" * 5_000})  # fmt: skip
    record_pending(db, "r", [PendingCall(call=short), PendingCall(call=long)])
    listed = pending_json(db, "r")
    by_tool = {c["whole"]: c for c in listed["calls"]}
    [hashed] = [c.arguments_hash for c in deferred_calls(db, "r") if c.call_id == short.id]
    approve = pasted(by_tool[True]["approve"], tmp_path)
    assert approve == ["runs", "approve", "r", "--approve", f"{short.id}={hashed}"]
    assert pasted(by_tool[False]["approve"], tmp_path) == [
        "runs",
        "approve",
        "r",
        "--whole",
        long.id,
    ]
    assert (
        "characters not shown: loopwright runs approve r --whole 'y`" in by_tool[False]["arguments"]
    )
    assert not list(tmp_path.glob("pwned*"))


def test_a_pending_call_shows_every_character_it_holds(tmp_path: Path) -> None:
    # what the person approves is what the page shows: a RIGHT-TO-LEFT OVERRIDE in the
    # arguments would show "rm -rf ~" backwards, a zero-width space hide in a tool's name
    import loopwright as lw
    from loopwright.log._approvals import record_pending
    from loopwright.tools import PendingCall, arguments_hash
    from loopwright.viewer._data import pending_json

    db = tmp_path / "runs.db"
    call = lw.ToolCall(
        id="c\x1b[8m1",
        function="ba\u200bsh",
        arguments={"cmd": "echo hi \u202e~ fr- mr", "note": "\x1b]0;title\x07"},
    )
    record_pending(
        db, "r", [PendingCall(call=call, arguments_hash=arguments_hash(call), approver="defer")]
    )
    [shown] = pending_json(db, "r")["calls"]
    assert shown["tool"] == '"ba\\u200bsh"' and shown["id"] == '"c\\u001b[8m1"'
    assert "\u202e" not in shown["arguments"] and "\\u202e~ fr- mr" in shown["arguments"]
    assert "\x1b" not in shown["arguments"] and "\x07" not in shown["arguments"]


def test_a_waiting_eval_is_not_offered_runs_approve(tmp_path: Path) -> None:
    """An eval's waiting samples are continued by a resume of the eval (``runs approve``
    refuses an eval's run): its page says so, not the command that would be refused."""
    task = Path(__file__).parents[1] / "evals" / "_status_task.py"
    db = tmp_path / "runs.db"
    [result] = lw.eval(f"{task}@statuses", db=db)
    assert result.status == "waiting"
    proc, url = start_viewer(db)
    try:
        run = httpx.get(url.rstrip("/") + f"/api/runs/{result.run_id}", timeout=30).json()
    finally:
        proc.terminate()
        proc.wait(10)
    assert run["status"] == "waiting"
    assert "pending" not in run
    assert run["resume"] == f"loopwright runs resume {result.run_id}"
