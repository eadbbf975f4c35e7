"""Evals on a real local Ray cluster: the same result as one process, and a worker killed
mid-eval loses only its in-flight samples (they finish on a new worker)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from tests.sandboxes.conftest import BWRAP_PROBLEM

ray = pytest.importorskip("ray")

TASKS = """
import asyncio, os
import loopwright as lw

async def add(messages, tools, config):
    q = next(m.content for m in messages if m.role == "user")
    a, b = (int(x) for x in q.split("+"))
    if not any(m.role == "tool" for m in messages):
        return lw.ModelOutput.for_tool_call("bash", {"cmd": f"echo $(({a}+{b}))"})
    with open(os.environ["CALLS_FILE"], "a") as f:
        f.write(f"{a} {os.getpid()}\\n")
    marker = os.environ.get("HANG_MARKER")
    if marker and a == int(os.environ["HANG_AT"]) and not os.path.exists(marker):
        open(marker, "w").close()
        await asyncio.sleep(300)  # the test kills this worker here
    seen = next(m.content for m in messages if m.role == "tool").strip()
    return f"It is {int(seen) + (1 if a % 4 == 3 else 0)}."

@lw.task
def adding(n: int = 10) -> lw.Task:
    data = [{"id": f"q{i}", "input": f"{i}+{i}", "target": str(2 * i)} for i in range(n)]
    return lw.Task(data, agent=lw.react(tools=[lw.bash()], submit=False),
                   scorer=lw.match("numeric"), model=lw.get_model("mock", outputs=add),
                   sandbox=os.environ.get("SANDBOX", "local"))
"""


ENV = ["CALLS_FILE", "SANDBOX"]  # sent to the workers, as API keys would be


@pytest.fixture(scope="module")
def cluster() -> Any:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tasks.py"
    path.write_text(TASKS)
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    monkeypatch.setenv("SANDBOX", "bwrap" if BWRAP_PROBLEM is None else "local")
    return path


def by_sample(db: Path, run_id: str | None) -> dict[tuple[str, int], Any]:
    assert run_id is not None
    with lw.load_run(run_id, db=db) as log:
        return {(s.id, s.epoch): (s.status, (s.scores or {}).get("match")) for s in log.samples}


async def test_an_eval_on_ray_equals_the_same_eval_in_one_process(
    cluster: Any, tasks: Path, tmp_path: Path
) -> None:
    [alone] = await lw.eval_async(f"{tasks}@adding", db=tmp_path / "one.db")
    [spread] = await lw.eval_async(
        f"{tasks}@adding", db=tmp_path / "ray.db", backend="ray", max_samples=2, ray_env=ENV
    )
    assert spread.status == "success" and spread.errors == 0, (
        spread.error,
        [s.error for s in spread.samples][:2],
    )
    assert spread.metrics == alone.metrics and spread.total == alone.total == 10
    assert by_sample(tmp_path / "ray.db", spread.run_id) == by_sample(
        tmp_path / "one.db", alone.run_id
    )
    # the samples ran in worker processes, not here
    pids = {int(line.split()[1]) for line in (tmp_path / "calls.txt").read_text().splitlines()}
    assert os.getpid() in pids  # the single-process run
    assert len(pids - {os.getpid()}) >= 1
    # the shard stores are next to the run store
    assert list((tmp_path / "ray-shards").glob("*/shard-*-of-*.db"))


async def test_a_worker_killed_mid_eval_loses_only_its_in_flight_samples(
    cluster: Any, tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "hung"
    monkeypatch.setenv("HANG_MARKER", str(marker))
    monkeypatch.setenv("HANG_AT", "7")
    calls = tmp_path / "calls.txt"
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if marker.exists() and calls.exists():
                for line in calls.read_text().splitlines():
                    a, pid = line.split()
                    if a == "7":
                        time.sleep(0.5)  # let the worker's other samples be recorded
                        os.kill(int(pid), signal.SIGKILL)
                        killed.append(int(pid))
                        return
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    [result] = await lw.eval_async(
        f"{tasks}@adding",
        db=tmp_path / "ray.db",
        backend="ray",
        max_samples=1,
        ray_env=[*ENV, "HANG_MARKER", "HANG_AT"],
    )
    thread.join()
    assert killed, "the sample never started"
    assert result.status == "success" and result.errors == 0 and result.completed == 10
    runs = [line.split() for line in calls.read_text().splitlines()]
    # sample 7 ran twice (the killed worker, then a new one); every sample ran at most
    # twice and the samples the dead worker had finished were not run again
    assert [a for a, _ in runs].count("7") == 2
    assert {pid for a, pid in runs if a == "7"} - {str(killed[0])}
    counts = {a: [b for b, _ in runs].count(a) for a, _ in runs}
    assert sum(counts.values()) <= 10 + 2  # at most the in-flight one (and one more) again
    assert result.metrics["match"]["accuracy"] == pytest.approx(0.8)  # 3 and 7 are off


def test_ray_needs_a_task_by_file_and_a_model_by_name(tmp_path: Path, tasks: Path) -> None:
    task = lw.Task([{"input": "1+1", "target": "2"}], agent=lw.react())
    with pytest.raises(lw.ConfigurationError, match="task file or name"):
        lw.eval(task, backend="ray", db=False)
    with pytest.raises(lw.ConfigurationError, match="model by name"):
        lw.eval(f"{tasks}@adding", backend="ray", model=lw.get_model("mock"), db=False)


def shout(messages: list[lw.ChatMessage], tools: Any, config: Any) -> str:
    q = next(m.content for m in messages if m.role == "user")
    return f"{q.upper()} from {os.getpid()}"


async def test_rollouts_on_ray_come_back_in_order_from_the_workers(cluster: Any) -> None:
    agent = lw.react(model=lw.get_model("mock", outputs=shout), submit=False)
    states = await lw.rollouts_async(
        agent, [f"item {i}" for i in range(12)], backend="ray", batch_size=3
    )
    texts = [s.text for s in states]
    assert [t.split(" from ")[0] for t in texts] == [f"ITEM {i}" for i in range(12)]
    pids = {int(t.split(" from ")[1]) for t in texts}
    assert os.getpid() not in pids  # they ran in the workers


async def test_stopped_and_waiting_samples_keep_their_status_on_ray(
    cluster: Any, tmp_path: Path
) -> None:
    task = Path(__file__).with_name("_status_task.py")
    db = tmp_path / "ray.db"
    [result] = await lw.eval_async(f"{task}@statuses", db=db, backend="ray", max_samples=2)
    s = {x.id: x for x in result.samples}
    assert {k: x.status for k, x in s.items()} == {
        "s0": "success",
        "s1": "stopped",
        "s2": "waiting",
    }
    assert s["s1"].reason == "budget spent on 1+1" and s["s1"].scores["match"].value == 0.0
    assert s["s2"].reason == "waiting for approval of bash (call-2)" and s["s2"].scores == {}
    assert result.status == "waiting" and (result.stopped, result.waiting) == (1, 1)
    rows = by_sample(db, result.run_id)
    assert [(k, status) for k, (status, _) in sorted(rows.items())] == [
        (("s0", 1), "success"),
        (("s1", 1), "stopped"),
        (("s2", 1), "waiting"),
    ]
    assert rows[("s1", 1)][1]["value"] == 0.0 and rows[("s2", 1)][1] is None


async def test_a_stopped_and_a_waiting_rollout_say_so_on_ray(cluster: Any) -> None:
    from ._status_task import StopOnOnes, answer, bash

    agent = lw.react(
        tools=[bash], submit=False, hooks=[StopOnOnes()], model=lw.get_model("mock", outputs=answer)
    )
    states = await lw.rollouts_async(agent, ["0+0", "1+1", "2+2"], backend="ray", approval="defer")
    assert [s.completed for s in states] == ["answer", "stopped", "waiting"]
    assert states[1].error == "budget spent on 1+1"
    assert [p.call.id for p in states[2].pending] == ["call-2"]
    with pytest.raises(lw.ConfigurationError, match="approval policy by name"):
        await lw.rollouts_async(agent, ["x"], backend="ray", approval=lw.defer_approval("bash"))
