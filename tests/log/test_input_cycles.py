"""A run store whose chain of model inputs loops (crafted, or imported damaged) is a
clear ``RunStoreError`` for the resume point and the viewer's ``model_input``, not a
hang with memory growing without bound."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import loopwright as lw

SRC = Path(lw.__file__).parent.parent


def _crashed_run(db: Path) -> tuple[str, list[str]]:
    @lw.tool
    async def work(i: int) -> str:
        """Work.

        Args:
            i: The step.
        """
        return "ok"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done == 3:
            raise RuntimeError("crash")
        return lw.ModelOutput.for_tool_call("work", {"i": done})

    agent = lw.react(tools=[work], model=lw.get_model("mock", outputs=respond), submit=False)
    try:
        asyncio.run(lw.run(agent, "go", db=db))
    except RuntimeError:
        pass
    [info] = lw.list_runs(db)
    with sqlite3.connect(db) as conn:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM events WHERE run_id = ? AND type = 'model' ORDER BY seq",
                (info.id,),
            )
        ]
    conn.close()
    return info.id, ids


def _loop(db: Path, event: str, to: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE events SET data = json_set(data, '$.input_base', ?) WHERE id = ?", (to, event)
        )
    conn.close()


def _in_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child process with a memory cap and a timeout: the bug this
    guards against loops for ever, growing (it must not take the test run with it)."""
    prelude = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_chain_of_inputs_that_loops_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id, ids = _crashed_run(db)
    assert len(ids) >= 3
    # the first call's input says it extends the second, which extends the first
    _loop(db, ids[0], ids[1])
    done = _in_child(
        f"""
        import loopwright as lw
        from loopwright.log._resume_point import resume_point
        try:
            resume_point({run_id!r}, {str(db)!r})
        except lw.RunStoreError as ex:
            print("point:", ex)
        with lw.load_run({run_id!r}, {str(db)!r}) as log:
            event = [e for e in log.events() if isinstance(e, lw.ModelEvent)][-1]
            try:
                log.model_input(event)
            except lw.RunStoreError as ex:
                print("input:", ex)
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert any(x.startswith("point:") and "loops back" in x for x in lines), lines
    assert any(x.startswith("input:") and "loops back" in x for x in lines), lines


def test_a_call_whose_input_extends_itself_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id, ids = _crashed_run(db)
    _loop(db, ids[-2], ids[-2])  # (the last answered call; the last one failed)
    done = _in_child(
        f"""
        import loopwright as lw
        from loopwright.log._resume_point import resume_point
        try:
            resume_point({run_id!r}, {str(db)!r})
        except lw.RunStoreError as ex:
            print("point:", ex)
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "point:" in done.stdout and "loops back" in done.stdout
    # the store itself is fine to read otherwise
    with lw.load_run(run_id, db) as log:
        assert sum(isinstance(e, lw.ModelEvent) for e in log.events()) == len(ids)
