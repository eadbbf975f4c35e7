"""Resume: a run killed with kill -9 in the middle of a tool call goes on in a new process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import loopwright as lw

SCRIPT = Path(__file__).with_name("_resume_script.py")
SRC = Path(lw.__file__).parent.parent


def _spawn(db: Path, side: Path, *args: str, hang: int | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("HANG_AT", None)
    if hang is not None:
        env["HANG_AT"] = str(hang)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(side), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_at(proc: subprocess.Popen[str], side: Path, line: str) -> None:
    """kill -9 ``proc`` once ``line`` is in the side-effect file (its tool is asleep)."""
    deadline = time.monotonic() + 120
    while line not in (side.read_text().splitlines() if side.exists() else []):
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {line!r}: {proc.communicate()}")
        assert time.monotonic() < deadline, f"no {line!r} in time"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def test_a_killed_run_resumes_twice_in_new_processes(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    _kill_at(_spawn(db, side, "start", hang=3), side, "start 3")
    [info] = lw.list_runs(db)
    assert info.status == "interrupted"
    run_id = info.id
    # the second part is killed too, in its own tool call
    _kill_at(_spawn(db, side, "resume", run_id, hang=6), side, "start 6")
    assert lw.list_runs(db)[0].status == "interrupted"
    out = _finish(_spawn(db, side, "resume", run_id))
    assert f"RUN {run_id} limit" in out

    lines = side.read_text().splitlines()
    starts = Counter(line for line in lines if line.startswith("start"))
    ends = Counter(line for line in lines if line.startswith("end"))
    # the step limit of 10 held across the three processes: steps 0..9, each done once
    assert ends == Counter(f"end {i}" for i in range(10))
    # only the calls in flight at the kills ran again
    assert starts == Counter({**{f"start {i}": 1 for i in range(10)}, "start 3": 2, "start 6": 2})

    [row] = lw.list_runs(db)  # one run
    assert row.id == run_id and row.status == "limit"
    assert row.metadata["resumes"] == 2
    with lw.load_run(run_id, db) as log:
        events = list(log.events())
        marks = [e for e in events if isinstance(e, lw.InfoEvent) and e.source == "resume"]
        models = [e for e in events if isinstance(e, lw.ModelEvent)]
        store = log.store()
        messages = log.messages()
    # two resume marks, each naming the call that runs again
    resumed = [m for m in marks if isinstance(m.data, dict)]
    assert [m.data["resume"] for m in resumed] == [1, 2]  # type: ignore[index]
    assert [c["function"] for c in resumed[0].data["run_again"]] == ["work"]  # type: ignore[index]
    again = [m for m in marks if isinstance(m.data, str)]
    assert len(again) == 2 and all("runs again" in str(m.data) for m in again)
    # every step recorded once: the steps answered from the record are not model calls
    assert len(models) == 10
    # the store is the recorded one: the change the killed call made was not recorded
    assert store["last"] == 9 and store["done"] == list(range(10))
    # the conversation has each step's call and result once
    results = [m.content for m in messages if isinstance(m, lw.ToolMessage)]
    assert results == [f"did {i}" for i in range(10)]
    # a finished run refuses to be resumed
    proc = _spawn(db, side, "resume", run_id)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "finished (limit)" in err
