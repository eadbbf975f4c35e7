"""``loopwright eval`` with samples a hook stopped and samples waiting for approval: the
exit code, ``--json``, the messages, ``runs show`` and ``runs resume`` (the real command,
a real run store, the task of ``tests/evals/_status_task.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import loopwright as lw

from ._cli import cli

TASK = Path(__file__).parents[1] / "evals" / "_status_task.py"


def test_waiting_samples_exit_4_and_a_resume_that_approves_finishes_them(tmp_path: Path) -> None:
    shutil.copy(TASK, tmp_path / "tasks.py")
    r = cli("eval", "tasks.py@statuses", "--json", "--no-fail-on-error", cwd=tmp_path)
    assert r.code == 4, r.err  # waiting: the eval is not finished (the stopped one let be)
    [row] = json.loads(r.out)["tasks"]
    assert (row["status"], row["stopped"], row["waiting"], row["scored"]) == ("waiting", 1, 1, 2)
    assert json.loads(r.out)["exit_code"] == 4
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status == "waiting"

    shown = cli("runs", "show", run.id, cwd=tmp_path)
    assert shown.code == 0, shown.err
    assert "waiting for approval (1 samples)" in shown.out
    assert f"loopwright runs resume {run.id}" in shown.out
    assert "budget spent on 1+1" in shown.out and "stopped" in shown.out
    listed = cli("runs", "list", cwd=tmp_path)
    assert "1 stopped, 1 waiting" in listed.out
    for approve in ([], ["--approve", "call-1=" + "0" * 64]):  # the listing, a decision
        refused = cli("runs", "approve", run.id, *approve, cwd=tmp_path)
        assert refused.code != 0 and "resume the eval" in refused.err

    # the decision: the task's policy approves bash now; the waiting sample goes on
    done = cli("runs", "resume", run.id, "-T", "approve=true", "--json", cwd=tmp_path)
    [row] = json.loads(done.out)["tasks"]
    assert (row["status"], row["stopped"], row["waiting"], row["scored"]) == ("success", 1, 0, 3)
    assert done.code == 1, done.err  # the stopped sample counts as failed by default


def test_stopped_samples_fail_the_exit_code_unless_told_not_to(tmp_path: Path) -> None:
    shutil.copy(TASK, tmp_path / "tasks.py")
    r = cli("eval", "tasks.py@statuses", "-T", "approve=true", cwd=tmp_path)
    assert r.code == 1, r.err
    assert "1 of 3 samples of statuses were stopped by a hook" in r.err
    assert "1 of 3 samples were stopped by a hook before they finished" in r.out
    assert "s1: budget spent on 1+1" in r.out
    r = cli("eval", "tasks.py@statuses", "-T", "approve=true", "--no-fail-on-error", cwd=tmp_path)
    assert r.code == 0, r.err
    r = cli("eval", "tasks.py@statuses", "-T", "approve=true", "--fail-on-error", "2", cwd=tmp_path)
    assert r.code == 0, r.err  # one stopped of a threshold of two
    r = cli("eval", "tasks.py@statuses", "-T", "approve=true", "-T", "stop=false", cwd=tmp_path)
    assert r.code == 0, r.err
    assert "stopped" not in r.err and "waiting" not in r.err
    r = cli("eval", "tasks.py@statuses", "-T", "stop=false", cwd=tmp_path)
    assert r.code == 4, r.err
    assert "waiting: 1 of 3 samples of statuses wait for approval (not scored)" in r.err
    assert "1 of 3 samples wait for approval" in r.out
