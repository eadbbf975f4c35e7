"""``eval --resume`` of an eval still running is refused, and the samples in flight are
taken by one resume only: two resumes at once never continue a sample twice."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log._claims import CLAIM_KEY, claim_samples
from loopwright.log._db import hostname

from ._resume_spawn import spawn


def test_an_eval_still_running_is_not_resumed(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    first = spawn(db, side, hang=True)
    try:
        deadline = time.monotonic() + 120
        hung = {f"start q{i} 1" for i in range(3)}
        while not hung <= set(side.read_text().splitlines() if side.exists() else []):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [info] = lw.list_runs(db)
        assert info.status == "running"
        again = spawn(db, side, info.id)
        _, err = again.communicate(timeout=120)
        assert again.returncode != 0
        assert f"is still running, in process {first.pid} on this machine" in err
        assert first.poll() is None  # (the first eval goes on)
        lines = side.read_text().splitlines()
        for q in ("q0", "q1", "q2"):  # nothing was continued a second time
            assert [x for x in lines if x.startswith(f"start {q} ")] == [
                f"start {q} 0",
                f"start {q} 1",
            ]
        with lw.load_run(info.id, db) as log:  # its samples were not taken
            assert all(CLAIM_KEY not in s.metadata for s in log.samples)
        assert len(lw.list_runs(db)) == 1  # no second run was opened
    finally:
        first.kill()
        first.wait()


def _task(log: list[str], hang: asyncio.Event | None) -> lw.Task:
    @lw.tool
    async def work(sample: str, i: int) -> str:
        """Do step i of a sample's work.

        Args:
            sample: The sample's question.
            i: The step.
        """
        log.append(f"start {sample} {i}")
        if hang is not None and i == 1:
            hang.set()
            await asyncio.sleep(3600)
        return f"did {i}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        question = next(m.content for m in messages if m.role == "user")
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done == 3:
            return lw.ModelOutput.for_tool_call("submit", {"answer": question})
        return lw.ModelOutput.for_tool_call("work", {"sample": question, "i": done})

    data = [{"id": f"s{i}", "input": f"q{i}", "target": f"q{i}"} for i in range(2)]
    return lw.Task(
        data,
        agent=lw.react(tools=[work], model=lw.get_model("mock", outputs=respond)),
        scorer=lw.match(),
        name="w",
    )


async def _cancelled_eval(db: Path, log: list[str]) -> str:
    hang = asyncio.Event()
    run = asyncio.create_task(lw.eval_async(_task(log, hang), db=db, max_samples=1))
    await hang.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [info] = lw.list_runs(db)
    return info.id


async def test_two_resumes_at_once_continue_each_sample_once(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_eval(db, log)
    assert log == ["start q0 0", "start q0 1"]
    first, second = await asyncio.gather(
        lw.eval_async(_task(log, None), db=db, resume=run_id, max_samples=1),
        lw.eval_async(_task(log, None), db=db, resume=run_id, max_samples=1),
        return_exceptions=True,
    )
    done = [r for r in (first, second) if isinstance(r, list)]
    refused = [r for r in (first, second) if isinstance(r, BaseException)]
    assert len(done) == 1 and len(refused) == 1, (first, second)
    assert isinstance(refused[0], (lw.ConfigurationError, lw.RunStoreError))
    assert done[0][0].status == "success"
    # q0's call in flight ran again once, not once per resume
    assert log.count("start q0 1") == 2 and log.count("start q0 2") == 1
    assert log.count("start q1 0") == 1


def _claimed_by(db: Path, run_id: str, host: str, pid: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"UPDATE samples SET metadata = json_set(metadata, '$.{CLAIM_KEY}', "
            "json_object('host', ?, 'pid', ?)) WHERE run_id = ?",
            (host, pid, run_id),
        )
    conn.close()


def _sleeper() -> subprocess.Popen[bytes]:
    """A live process of this machine that is not this one."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


async def test_samples_taken_by_a_live_resume_are_refused(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_eval(db, log)
    alive = _sleeper()
    try:
        _claimed_by(db, run_id, hostname(), alive.pid)
        for force in (False, True):
            with pytest.raises(lw.ConfigurationError, match=f"in process {alive.pid} on this"):
                await lw.eval_async(_task(log, None), db=db, resume=run_id, force=force)
    finally:
        alive.kill()
        alive.wait()
    _claimed_by(db, run_id, "another-host.invalid", 1)
    with pytest.raises(lw.ConfigurationError, match="another machine"):
        await lw.eval_async(_task(log, None), db=db, resume=run_id)
    assert len(lw.list_runs(db)) == 1
    # the resume that took them died (a pid of this machine no longer alive): taken again
    _claimed_by(db, run_id, hostname(), alive.pid)
    [result] = await lw.eval_async(_task(log, None), db=db, resume=run_id)
    assert result.status == "success" and log.count("start q0 1") == 2
    with lw.load_run(run_id, db) as run_log:
        [s0] = [s for s in run_log.samples if s.id == "s0"]
        assert s0.metadata[CLAIM_KEY]["pid"] == os.getpid()


async def test_a_claim_checks_the_holder_it_read(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_eval(db, log)
    with lw.load_run(run_id, db) as run_log:
        [s0] = [s for s in run_log.samples if s.id == "s0"]
    assert s0.status == "cancelled"
    # two resumes read the sample unclaimed; the first to write takes it
    claim_samples(db, run_id, [(s0.key, s0.status, (None, None))])
    with pytest.raises(lw.RunStoreError, match="taken by another resume"):
        claim_samples(db, run_id, [(s0.key, s0.status, (None, None))])
    with lw.load_run(run_id, db) as run_log:
        mark = next(s for s in run_log.samples if s.id == "s0").metadata[CLAIM_KEY]
    assert (mark["host"], mark["pid"]) == (hostname(), os.getpid())
    # all or none: a batch with one sample it cannot take takes none
    batch = [(s0.key, s0.status, (hostname(), os.getpid())), ("missing", "cancelled", (None, None))]
    with pytest.raises(lw.RunStoreError, match="'missing'"):
        claim_samples(db, run_id, batch)
    with lw.load_run(run_id, db) as run_log:
        assert next(s for s in run_log.samples if s.id == "s0").metadata[CLAIM_KEY] == mark
