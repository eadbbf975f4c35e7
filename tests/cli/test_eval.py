"""``loopwright eval`` through the real entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import loopwright as lw

from ._cli import cli, env_for, script

TASKS = """
import asyncio
import loopwright as lw

def answer(messages, tools, config):
    return "no idea"

async def add(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    a, b = (int(x) for x in q.split("+"))
    if a == 13:
        raise lw.ModelAPIError("unlucky")
    if a >= HANG_FROM:
        await asyncio.sleep(120)
    return f"It is {a + b + (1 if a % 4 == 3 else 0)}."

HANG_FROM = 10**9

@lw.task
def adding(n: int = 8, hang_from: int = 10**9) -> lw.Task:
    global HANG_FROM
    HANG_FROM = hang_from
    data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(n)]
    return lw.Task(
        data,
        agent=lw.react(submit=False),
        scorer=[lw.match("numeric"), lw.includes(name="has_it")],
        model=lw.get_model("mock", outputs=add),
    )

@lw.task
def other() -> lw.Task:
    return lw.Task([{"input": "x", "target": "y"}], agent=lw.react(submit=False),
                   scorer=lw.match(), model=lw.get_model("mock", outputs=answer))
"""


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.py"
    path.write_text(TASKS)
    return path


def test_eval_json_metrics(tmp_path: Path, tasks: Path) -> None:
    r = cli("eval", f"{tasks}@adding", "--json", "--max-samples", "3", cwd=tmp_path)
    assert r.code == 0, r.err
    data = r.json()
    assert data["exit_code"] == 0
    [t] = data["tasks"]
    assert t["task"] == "adding" and t["status"] == "success" and t["model"] == "mock"
    assert (t["total"], t["completed"], t["errors"]) == (8, 8, 0)
    # 3 and 7 get a wrong answer: 6/8
    assert t["metrics"]["match"]["accuracy"] == 0.75
    assert t["metrics"]["has_it"]["accuracy"] == 0.75
    assert t["params"] == {}
    with lw.load_run(t["run_id"], db=tmp_path / "runs.db") as log:
        assert log.info.name == "adding" and len(log.samples) == 8


def test_task_args_limit_epochs_and_table(tmp_path: Path, tasks: Path) -> None:
    r = cli(
        "eval", f"{tasks}@adding", "-T", "n=6", "--limit", "4", "--epochs", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "adding" in r.err and "8/8" in r.err  # the progress bar, on stderr
    assert "accuracy" in r.out and "stderr" in r.out  # the metrics table, on stdout
    assert "8/8 samples · 8 scored · 0 errors · 0 limited" in r.out
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.metadata["params"] == {"n": 6} and run.metadata["epochs"] == 2
    assert run.samples == 8


def test_every_task_of_a_file(tmp_path: Path, tasks: Path) -> None:
    r = cli("eval", str(tasks), "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    assert [t["task"] for t in r.json()["tasks"]] == ["adding", "other"]
    assert r.json()["tasks"][1]["metrics"]["match"]["accuracy"] == 0.0


def test_failed_samples_exit_1(tmp_path: Path, tasks: Path) -> None:
    r = cli("eval", f"{tasks}@adding", "-T", "n=15", cwd=tmp_path)
    assert r.code == 1
    assert "1 of 15 samples of adding failed" in r.err
    [run] = lw.list_runs(tmp_path / "runs.db")
    with lw.load_run(run.id, db=tmp_path / "runs.db") as log:
        [bad] = [s for s in log.samples if s.status == "error"]
        assert bad.id == "q13" and "unlucky" in (bad.error or "")


def test_eval_usage_errors(tmp_path: Path, tasks: Path) -> None:
    assert cli("eval", cwd=tmp_path).code == 2
    r = cli("eval", f"{tasks}@nope", cwd=tmp_path)
    assert r.code == 2 and "has no task 'nope'" in r.err
    r = cli("eval", f"{tasks}@adding", "-T", "size=3", cwd=tmp_path)
    assert r.code == 2 and "no parameter 'size'" in r.err
    r = cli("eval", f"{tasks}@adding", "--max-samples", "0", cwd=tmp_path)
    assert r.code == 2


def test_ctrl_c_keeps_what_ran_and_resume_finishes(tmp_path: Path, tasks: Path) -> None:
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loopwright.cli",
            "eval",
            f"{tasks}@adding",
            "-T",
            "n=6",
            "-T",
            "hang_from=4",
            "--max-samples",
            "2",
        ],
        cwd=tmp_path,
        env=env_for(db),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        done = 0
        while done < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
            if db.exists():
                try:
                    with lw.load_run(None, db=db) as log:
                        done = sum(s.status == "success" for s in log.samples)
                except lw.RunStoreError:
                    pass
        assert done == 4, "the first four samples did not finish"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    [run] = lw.list_runs(db)
    assert f"interrupted: 4/6 samples kept in run {run.id}; finish it with --resume {run.id}" in err
    assert run.status == "cancelled"
    with lw.load_run(run.id, db=db) as log:
        statuses = sorted(s.status for s in log.samples)
        assert statuses == ["cancelled", "cancelled"] + ["success"] * 4

    r = cli("eval", f"{tasks}@adding", "-T", "n=6", "--resume", run.id, "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    [t] = r.json()["tasks"]
    assert t["resumed_from"] == run.id and t["completed"] == 6
    assert t["metrics"]["match"]["accuracy"] == pytest.approx(5 / 6)  # only q3 is wrong
    with lw.load_run(t["run_id"], db=db) as log:
        fresh = [s for s in log.samples if "resumed_from" not in s.metadata]
        assert sorted(s.id for s in fresh) == ["q4", "q5"]


def test_eval_runs_without_a_terminal(tmp_path: Path, tasks: Path) -> None:
    # the progress display must not need a TTY (CI logs)
    env = env_for(tmp_path / "runs.db")
    env["TERM"] = "dumb"
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "eval", f"{tasks}@other"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1/1 samples" in proc.stdout
    assert lw.list_runs(tmp_path / "runs.db")[0].metadata["task"] == "other"


CRASHING = """
import loopwright as lw

def reply(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    if q != "0":
        raise lw.ModelAPIError("provider down")
    return q

@lw.task
def crashing() -> lw.Task:
    return lw.Task([{"input": str(i), "target": str(i)} for i in range(5)],
                   agent=lw.react(submit=False), scorer=lw.match(),
                   model=lw.get_model("mock", outputs=reply))
"""


def test_failed_samples_are_counted_and_set_the_exit_code(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASHING)
    # 4 of 5 crash: the one scored is right, and the table says it is 1 of 5
    r = cli("eval", "crash.py", cwd=tmp_path)
    assert r.code == 1, r.err
    assert "match  │    1/5 │    1.000" in r.out
    assert "4 of 5 samples failed and are not scored" in r.out
    assert "5/5 samples · 1 scored · 4 errors" in r.out
    assert "4 of 5 samples of crashing failed and are not scored" in r.err

    r = cli("eval", "crash.py", "--json", "--fail-on-error", "5", cwd=tmp_path)
    [t] = r.json()["tasks"]
    assert (t["scored"], t["errors"], t["total"]) == (1, 4, 5)
    assert r.code == 0 and r.json()["exit_code"] == 0  # 4 errors < 5
    assert r.json()["fail_on_error"] == 5
    assert cli("eval", "crash.py", "--json", "--no-fail-on-error", cwd=tmp_path).code == 0
    r = cli("eval", "crash.py", "--fail-on-error", "1.5", cwd=tmp_path)
    assert r.code == 2 and "whole count" in r.err


def test_all_failed_reads_as_nothing_scored(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASHING.replace('q != "0"', "True"))
    r = cli("eval", "crash.py", "--json", cwd=tmp_path)
    assert r.code == 1
    [t] = r.json()["tasks"]
    assert (t["scored"], t["errors"]) == (0, 5)
    assert t["metrics"] == {"match": {"accuracy": None, "stderr": None}}
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert isinstance(run.output, dict) and run.output["metrics"]["match"]["accuracy"] is None
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 0 and "nan" not in r.out


TYPED = """
import loopwright as lw

@lw.task
def typed(max_steps: int = 10, word: str = "x") -> lw.Task:
    from neighbour_of_tasks import TARGET  # next to this file, imported as the task is built
    data = [{"id": i, "input": word, "target": TARGET} for i in range(1000)]
    return lw.Task(data, agent=lw.react(submit=False), scorer=lw.match(),
                   model=lw.get_model("mock", outputs=lambda m, t, c: TARGET[:max_steps]))

@lw.task
def empty() -> lw.Task:
    return lw.Task(lw.json_dataset("empty.jsonl"))
"""


def test_task_arguments_are_checked_before_any_sample_runs(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()  # not the working directory, which is on sys.path anyway
    (tmp_path / "tasks" / "typed.py").write_text(TYPED)
    (tmp_path / "tasks" / "neighbour_of_tasks.py").write_text("TARGET = 'yes'\n")
    r = cli("eval", "tasks/typed.py@typed", "-T", "max_steps=abc", cwd=tmp_path)
    assert r.code == 2
    assert "max_steps='abc' is not a valid int" in r.err
    assert not (tmp_path / "runs.db").exists() or not lw.list_runs(tmp_path / "runs.db")
    # a str parameter keeps the text typed; the neighbour module is importable
    r = cli("eval", "tasks/typed.py@typed", "-T", "word=007", "-T", "max_steps=3", "--limit", "2",
            "--json", cwd=tmp_path)  # fmt: skip
    assert r.code == 0, r.err
    [t] = r.json()["tasks"]
    assert t["params"] == {"word": "007", "max_steps": 3} and t["scored"] == 2


def test_an_empty_dataset_is_refused(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(TYPED)
    (tmp_path / "neighbour_of_tasks.py").write_text("TARGET = 'yes'\n")
    (tmp_path / "empty.jsonl").write_text("")
    r = cli("eval", "typed.py@empty", cwd=tmp_path)
    assert r.code == 2
    assert "a task needs at least one sample; the dataset" in r.err and "has none" in r.err


ONE = """
import loopwright as lw

@lw.task
def one() -> lw.Task:
    return lw.Task([{"id": "a", "input": "2+2?", "target": "4"}], agent=lw.react(submit=False),
                   scorer=lw.match("numeric"), model=lw.get_model("mock", outputs=["It is 4."]))
"""


def test_generation_settings_and_the_replay_model_reading_db(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(ONE)
    # -G and friends apply over the task's own model
    r = cli(
        "eval", "one.py", "--temperature", "0.3", "--max-tokens", "9", "-G", "seed=7",
        "--db", "other.db", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.code == 0, r.err
    [t] = r.json()["tasks"]
    assert t["model"] == "mock" and t["metrics"]["match"]["accuracy"] == 1.0
    with lw.load_run(t["run_id"], db=tmp_path / "other.db") as log:
        [config] = [e.config for e in log.events("a") if isinstance(e, lw.ModelEvent)]
    assert (config.temperature, config.max_tokens, config.seed) == (0.3, 9, 7)
    r = cli("eval", "one.py", "-G", "nope=1", cwd=tmp_path)
    assert r.code == 2 and "unknown generation setting 'nope'" in r.err
    # the replay model reads the recorded run from the command's --db
    recorded = cli(
        "run", "2+2?", "-m", "mock", "-M", script(tmp_path / "s.json", ["It is 4."]),
        "--db", "other.db", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert recorded.code == 0, recorded.err
    run_id = recorded.json()["run_id"]
    r = cli("eval", "one.py", "-m", f"replay/{run_id}", "--db", "other.db", "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    [t] = r.json()["tasks"]
    assert t["model"] == f"replay/{run_id}" and t["scored"] == 1
    assert t["metrics"]["match"]["accuracy"] == 1.0


HOSTILE_TASK = """
import loopwright as lw

def reply(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    if q.startswith("fail"):
        raise ValueError("bad input " + q)
    return "answer " + q

@lw.task
def hostile() -> lw.Task:
    return lw.Task(lw.json_dataset("data.jsonl"), name=open("name.txt").read(),
                   agent=lw.react(submit=False), scorer=lw.match(name="[/]score\x1b[2J"),
                   model=lw.get_model("mock", outputs=reply))
"""


def test_untrusted_text_is_made_visible(tmp_path: Path) -> None:
    # escape sequences (conceal, title, clear screen), rich markup, \r and a lone surrogate
    evil = "\x1b[8m[bold red]x[/bold red][/]\ud800\x1b]0;owned\x07\x1b[2J\r"
    rows = [
        {"id": f"s{i}{evil}", "input": ("fail" if i % 2 else "ok") + evil, "target": evil}
        for i in range(4)
    ]
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "name.txt").write_text("[/bold red]task\x1b[2J", encoding="utf-8")
    (tmp_path / "hostile.py").write_text(HOSTILE_TASK)
    r = cli("eval", "hostile.py", cwd=tmp_path)
    assert r.code == 1, r.err  # two samples failed; the rest ran, and the run is stored
    for text in (r.out, r.err):
        assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert "2 of 4 samples failed" in r.out
    shown = "\\x1b[8m[bold red]x[/bold red][/]\\ud800\\x1b]0;owned\\x07\\x1b[2J\\r"
    # the failed samples' ids and errors, as text (not markup), ids cut short
    assert f"  s1{shown[:20]}" in r.out and f": ValueError: bad input fail{shown}\n" in r.out
    assert "[/bold red]task\\x1b[2J" in r.err  # the progress bar's task name
    assert "[/]score\\x1b[2J 1.000 of 2" in r.err  # its running score
    assert "[/]score\\x1b[2J │    2/4" in r.out  # the metrics table
    assert "2 of 4 samples of [/bold red]task\\x1b[2J failed" in r.err
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status != "running" and run.samples == 4
    with lw.load_run(run.id, db=tmp_path / "runs.db") as log:
        assert sorted(s.status for s in log.samples) == ["error", "error", "success", "success"]
    r = cli("eval", "hostile.py", "--json", cwd=tmp_path)
    assert r.code == 1 and "\x1b" not in r.out
    [t] = r.json()["tasks"]
    assert (t["scored"], t["errors"]) == (2, 2)
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 0 and "\x1b" not in r.out and "[/bold red]task\\x1b[2J" in r.out
