"""``loopwright runs resume`` through the real entry point: a `loopwright run` and a
`loopwright eval` killed with kill -9, resumed from what they recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import loopwright as lw

from ._cli import cli, env_for, script

TOOLS = """
import asyncio, os
import loopwright as lw

SIDE = os.path.join(os.path.dirname(__file__), "side.txt")

def _lines():
    return open(SIDE).read().splitlines() if os.path.exists(SIDE) else []

@lw.tool
async def work() -> str:
    '''Do the next piece of work.'''
    n = sum(1 for line in _lines() if line.startswith("end"))
    await lw.current_recording().flush()
    with open(SIDE, "a") as f:
        f.write(f"start {n}\\n")
    await asyncio.sleep(3600 if os.environ.get("HANG") and n == 1 else 0.01)
    with open(SIDE, "a") as f:
        f.write(f"end {n}\\n")
    return f"did {n}"
"""

TASKS = """
import asyncio, os
import loopwright as lw

def respond(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    done = sum(1 for m in messages if m.role == "tool")
    if done == 2:
        return lw.ModelOutput.for_tool_call("submit", {"answer": q})
    return lw.ModelOutput.for_tool_call("work", {"q": q})

@lw.tool
async def work(q: str) -> str:
    '''Work on a question.

    Args:
        q: The question.
    '''
    side = os.path.join(os.path.dirname(__file__), "side.txt")
    lines = open(side).read().splitlines() if os.path.exists(side) else []
    n = lines.count(f"end {q}")
    await lw.current_recording().flush()
    with open(side, "a") as f:
        f.write(f"start {q}\\n")
    await asyncio.sleep(3600 if os.environ.get("HANG") and n == 1 else 0.01)
    with open(side, "a") as f:
        f.write(f"end {q}\\n")
    return "ok"

@lw.task
def busy(n: int = 3) -> lw.Task:
    data = [{"id": f"s{i}", "input": f"q{i}", "target": f"q{i}"} for i in range(n)]
    return lw.Task(data, agent=lw.react(tools=[work]), scorer=lw.match(),
                   model=lw.get_model("mock", outputs=respond))
"""


def _start(args: list[str], cwd: Path, db: Path) -> subprocess.Popen[str]:
    env = {**env_for(db), "HANG": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "loopwright.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_when(proc: subprocess.Popen[str], side: Path, done: int, what: str) -> None:
    deadline = time.monotonic() + 120
    while (side.read_text().count(what) if side.exists() else 0) < done:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_killed_cli_run_resumes_with_its_recorded_options(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    (tmp_path / "tools.py").write_text(TOOLS)
    outputs = script(tmp_path / "script.json", [{"tool": "work", "arguments": {}}] * 10)
    run = ["run", "Work.", "-m", "mock", "-M", outputs, "-t", "tools.py:work", "--max-steps", "4"]
    _kill_when(_start([*run, "-q"], tmp_path, db), side, 2, "start")
    [info] = lw.list_runs(db)
    assert info.status == "interrupted"
    assert info.metadata["cli"]["tools"] == [f"{tmp_path / 'tools.py'}:work"]
    # resumed from another folder: the recorded paths are absolute
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = cli("runs", "resume", info.id[:8], "--json", cwd=elsewhere, db=db)
    assert r.code == 3, r.err  # the step limit of 4, across both processes
    report = r.json()
    assert report["status"] == "limit" and report["run_id"] == info.id
    lines = side.read_text().splitlines()
    assert Counter(x for x in lines if x.startswith("end")) == Counter(f"end {i}" for i in range(4))
    assert Counter(x for x in lines if x.startswith("start"))["start 1"] == 2  # in flight
    [row] = lw.list_runs(db)
    assert row.status == "limit" and row.resumes == 1
    shown = cli("runs", "show", info.id, cwd=tmp_path, db=db)
    assert "limit, resumed 1x" in shown.out
    listed = cli("runs", "list", cwd=tmp_path, db=db)
    assert "limit ↻1" in listed.out
    again = cli("runs", "resume", info.id, cwd=tmp_path, db=db)
    assert again.code == 2 and "finished (limit)" in again.err


def test_a_killed_cli_eval_resumes_its_samples_in_flight(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    (tmp_path / "tasks.py").write_text(TASKS)
    proc = _start(["eval", "tasks.py@busy", "-T", "n=3", "--max-samples", "3"], tmp_path, db)
    _kill_when(proc, side, 6, "start")  # each sample's second call in flight
    [first] = lw.list_runs(db)
    assert first.metadata["cli"]["tasks"] == [f"{tmp_path / 'tasks.py'}@busy"]
    r = cli("runs", "resume", first.id, "--json", cwd=tmp_path, db=db)
    assert r.code == 0, r.err
    [task] = json.loads(r.out)["tasks"]
    assert task["completed"] == 3 and task["resumed_from"] == first.id
    lines = side.read_text().splitlines()
    for q in ("q0", "q1", "q2"):  # the first call not again, the second (in flight) again
        assert lines.count(f"start {q}") == 3 and lines.count(f"end {q}") == 2
    # a command the run store has no options for
    r = cli("runs", "resume", "nope", cwd=tmp_path, db=db)
    assert r.code != 0 and "no run 'nope'" in r.err


def test_recorded_options_leave_out_secrets_and_make_paths_absolute(tmp_path: Path) -> None:
    from loopwright.cli._recorded import model_options_of

    recorded = model_options_of(
        "openai/gpt-4o-mini",
        ["base_url=http://127.0.0.1:8000/v1", "api_key=sk-secret", "AUTH_TOKEN=x", "n=@c.json"],
        None,
        None,
    )
    assert recorded["dropped_model_args"] == ["api_key", "AUTH_TOKEN"]
    assert "sk-secret" not in json.dumps(recorded)
    assert recorded["model_args"][0] == "base_url=http://127.0.0.1:8000/v1"
    assert recorded["model_args"][1] == f"n=@{Path.cwd() / 'c.json'}"
