"""The shard contract: ``--shard I/N`` runs a disjoint share, ``--merge`` makes one eval."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.evals._shard import Shard
from tests.cli._cli import cli, env_for

TASKS = """
import asyncio, os
import loopwright as lw

async def add(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    a, b = (int(x) for x in q.split("+"))
    with open(os.environ["CALLS_FILE"], "a") as f:
        f.write(f"{a}\\n")
    if a >= int(os.environ.get("HANG_FROM", 10**9)):
        await asyncio.sleep(120)
    return f"It is {a + b + (1 if a % 4 == 3 else 0)}."

@lw.task
def adding(n: int = 12) -> lw.Task:
    data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(n)]
    return lw.Task(data, agent=lw.react(submit=False), scorer=lw.match("numeric"),
                   model=lw.get_model("mock", outputs=add))
"""


def test_shards_are_disjoint_cover_everything_and_parse() -> None:
    units = [(f"s{i}", e) for i in range(301) for e in (1, 2)]
    shares = [Shard(k, 3).select("t", units) for k in (1, 2, 3)]
    assert set().union(*shares) == set(units)
    assert sum(len(s) for s in shares) == len(units)  # disjoint
    assert sorted(len(s) for s in shares) == [200, 201, 201]  # 602 units dealt in turn
    # the dataset's order does not matter, and another process deals the same
    assert Shard(2, 3).select("t", reversed(units)) == shares[1]
    code = (
        "from loopwright.evals._shard import Shard; "
        "print(sorted(Shard(2, 3).select('t', [(f's{i}', 1) for i in range(9)])))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        sorted(Shard(2, 3).select("t", [(f"s{i}", 1) for i in range(9)]))
    )
    assert Shard.parse(" 2 / 3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    for bad in ("0/3", "4/3", "1/0", "a/b", "1", "-1/2"):
        with pytest.raises(lw.ConfigurationError):
            Shard.parse(bad)


def _env(tmp_path: Path, db: Path) -> dict[str, str]:
    env = env_for(db)
    env["CALLS_FILE"] = str(tmp_path / "calls.txt")
    return env


def _eval(tmp_path: Path, tasks: Path, db: Path, *args: str) -> dict:  # type: ignore[type-arg]
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "eval", f"{tasks}@adding", "--json", *args],
        cwd=tmp_path,
        env=_env(tmp_path, db),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    [task] = json.loads(proc.stdout)["tasks"]
    return task  # type: ignore[no-any-return]


def _scores(db: Path, run_id: str) -> dict[tuple[str, int], object]:
    with lw.load_run(run_id, db=db) as log:
        return {(s.id, s.epoch): (s.scores or {}).get("match") for s in log.samples}


def test_three_shards_merged_equal_the_unsharded_eval(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.py"
    tasks.write_text(TASKS)
    whole = _eval(tmp_path, tasks, tmp_path / "whole.db", "--epochs", "2")
    shards = [
        _eval(tmp_path, tasks, tmp_path / f"s{k}.db", "--shard", f"{k}/3", "--epochs", "2")
        for k in (1, 2, 3)
    ]
    assert sum(s["total"] for s in shards) == whole["total"] == 24
    assert all(0 < s["total"] < 24 for s in shards)
    (tmp_path / "calls.txt").unlink()
    merged = _eval(
        tmp_path,
        tasks,
        tmp_path / "merged.db",
        "--epochs",
        "2",
        *[a for k in (1, 2, 3) for a in ("--merge", str(tmp_path / f"s{k}.db"))],
    )
    assert not (tmp_path / "calls.txt").exists()  # nothing ran again: all carried
    assert merged["metrics"] == whole["metrics"]
    assert merged["total"] == 24 and merged["completed"] == 24
    assert _scores(tmp_path / "merged.db", merged["run_id"]) == _scores(
        tmp_path / "whole.db", whole["run_id"]
    )


def test_a_killed_shard_rerun_runs_only_what_it_had_not_finished(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.py"
    tasks.write_text(TASKS)
    db = tmp_path / "s1.db"
    mine = Shard(1, 2).select("adding", [(f"q{i}", 1) for i in range(12)])
    owned = [i for i in range(12) if (f"q{i}", 1) in mine]
    assert len(owned) == 6
    hang = owned[-1]  # the shard's last sample hangs: the others finish first
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loopwright.cli",
            "eval",
            f"{tasks}@adding",
            "--shard",
            "1/2",
            "--max-samples",
            "1",
        ],
        cwd=tmp_path,
        env={**_env(tmp_path, db), "HANG_FROM": str(hang)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    calls = tmp_path / "calls.txt"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if calls.exists() and str(hang) in calls.read_text().split():
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    calls.unlink()
    rerun = _eval(tmp_path, tasks, db, "--shard", "1/2")
    assert calls.read_text().split() == [str(hang)]  # only the unfinished sample ran
    assert rerun["total"] == len(owned) and rerun["completed"] == len(owned)
    with lw.load_run(rerun["run_id"], db=db) as log:
        carried = [s for s in log.samples if s.metadata.get("resumed_from")]
        assert len(carried) == len(owned) - 1
        assert log.info.metadata["shard"] == "1/2"


def test_a_bad_shard_is_a_usage_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.py"
    tasks.write_text(TASKS)
    r = cli("eval", f"{tasks}@adding", "--shard", "4/3", cwd=tmp_path)
    assert r.code == 2 and "4/3" in r.err


def test_latest_samples_since_reads_only_what_finished_after(tmp_path: Path) -> None:
    from loopwright.evals._shard import latest_samples

    tasks = tmp_path / "tasks.py"
    tasks.write_text(TASKS)
    assert _eval(tmp_path, tasks, tmp_path / "s.db", "-T", "n=3")["completed"] == 3
    store, params = [tmp_path / "s.db"], {"n": 3}
    everything = latest_samples(store, task="adding", params=params)
    stamps = sorted(i.finished.timestamp() for i, _ in everything.values() if i.finished)
    assert len(stamps) == 3
    # stamps are rounded to the microsecond: the driver looks from 1 ms before its last
    assert latest_samples(store, task="adding", params=params, since=stamps[-1] + 1) == {}
    newest = latest_samples(store, task="adding", params=params, since=stamps[-1] - 0.001)
    assert newest and all(
        i.finished and i.finished.timestamp() >= stamps[-1] - 0.001 for i, _ in newest.values()
    )
    assert len(latest_samples(store, task="adding", params=params, since=stamps[0] - 1)) == 3


def test_an_eval_records_no_secret_held_in_an_object_argument_and_still_carries_over(
    tmp_path: Path,
) -> None:
    # a task argument that is an object holding a field named like a secret: the run's
    # row keeps its other fields, and a rerun with the same argument matches it
    import dataclasses
    import sqlite3

    @dataclasses.dataclass
    class Creds:
        user: str
        api_key: str

    calls: list[str] = []

    async def answer(messages: list[lw.ChatMessage], tools: object, config: object) -> str:
        q = next(m.text for m in messages if m.role == "user")
        calls.append(q)
        return str(sum(int(x) for x in q.split("+")))

    @lw.task
    def with_creds(creds: Creds) -> lw.Task:
        data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(3)]
        model = lw.get_model("mock", outputs=answer)
        return lw.Task(data, agent=lw.react(submit=False), scorer=lw.match(), model=model)

    db = tmp_path / "runs.db"
    secret = "sk-live-0123456789abcdef"
    task = with_creds(Creds("me", secret))
    [first] = lw.eval(task, db=db, max_samples=1)
    assert first.status == "success"
    with sqlite3.connect(db) as conn:
        [(metadata,)] = conn.execute("SELECT metadata FROM runs").fetchall()
    assert json.loads(metadata)["params"] == {"creds": {"user": "me"}}
    assert secret not in db.read_bytes().decode("latin-1")
    assert len(calls) == 3
    # the same argument again: every sample is carried over, none run again
    [again] = lw.eval(with_creds(Creds("me", secret)), db=db, merge=[db])
    assert again.status == "success" and len(calls) == 3
    assert again.metrics == first.metrics
    # another argument is another eval: its samples run
    lw.eval(with_creds(Creds("you", secret)), db=db, merge=[db])
    assert len(calls) == 6
