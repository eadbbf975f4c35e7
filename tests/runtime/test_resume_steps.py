"""Resume goes on from the agent loop's own step: not from a history policy's summary,
a hook's or a tool's model call; and ``force`` never takes a run alive on this machine."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.history import COMPACT_PROMPT
from loopwright.log._db import hostname
from loopwright.log._resume_point import resume_point


@lw.tool
async def work(i: int) -> str:
    """Do step i.

    Args:
        i: The step.
    """
    return f"did {i}"


class _Crash(Exception):
    """The process 'dies' in this model call."""


def _done(messages: Sequence[lw.ChatMessage]) -> int:
    """The steps done: the number in the newest tool result (``did N``) plus one."""
    results = [m.content for m in messages if isinstance(m, lw.ToolMessage)]
    return int(results[-1].split()[-1]) + 1 if results else 0


def _compacting(
    requests: list[list[lw.ChatMessage]], crash: bool, always: bool = False
) -> lw.ReactAgent:
    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        if always:
            raise _Crash("every call of the agent")
        if crash and any("[Summary of" in m.text for m in messages):
            raise _Crash("the agent's call after a compaction")
        requests.append(list(messages))
        done = _done(messages)
        if done == 5:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "all done"})
        return lw.ModelOutput.for_tool_call("work", {"i": done}, content=f"step {done}")

    summariser = lw.get_model("mock", outputs=["SUMMARY"] * 20)
    return lw.react(
        name="w",
        prompt="You work.",
        tools=[work],
        model=lw.get_model("mock", outputs=respond),
        history=lw.compact_when(max_messages=7, keep_last=2, model=summariser),
    )


async def test_a_run_resumed_after_a_compaction_goes_on_from_the_agents_step(
    tmp_path: Path,
) -> None:
    db, requests = tmp_path / "runs.db", []
    with pytest.raises(_Crash):
        await lw.run(_compacting(requests, crash=True), "Work.", db=db, raise_on_limit=True)
    [info] = lw.list_runs(db)
    point = resume_point(info.id, db)
    assert point.last is not None
    texts = [m.text for m in point.last.messages]
    assert texts[:2] == ["You work.", "Work."] and COMPACT_PROMPT not in texts
    assert point.last.step  # the agent's own call
    with lw.load_run(info.id, db) as log:
        event = next(e for e in log.events() if e.id == point.last.event_id)
        assert isinstance(event, lw.ModelEvent) and event.step and event.tools
        summaries = [e for e in log.events() if isinstance(e, lw.ModelEvent) and not e.tools]
        assert summaries and all(not e.step for e in summaries)  # (the summary: no step)

    requests.clear()
    state = await lw.resume(info.id, agent=_compacting(requests, crash=False), db=db)
    assert state.completed == "submit" and state.output is not None
    assert "all done" in state.output.text
    # every live request of the agent is its conversation: the system prompt and task
    # first, never the summariser's request
    assert requests
    for request in requests:
        assert [m.text for m in request[:2]] == ["You work.", "Work."]
        assert all(COMPACT_PROMPT not in m.text for m in request)
    results = [m.content for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[-1] == "all done" and "did 4" in results


class _Guard(lw.Hooks):
    """A hook that asks another model about each request (a top-level model call)."""

    def __init__(self) -> None:
        self.model = lw.get_model("mock", outputs=["fine"] * 50)

    async def before_model(self, request: Any) -> Any:
        await self.model.generate([lw.UserMessage(content="Is this request fine?")])
        return request


def _guarded(crash_at: int | None, checker: lw.Model) -> lw.ReactAgent:
    @lw.tool
    async def check(i: int) -> str:
        """Check step i with another model.

        Args:
            i: The step.
        """
        out = await checker.generate([lw.UserMessage(content=f"Check {i}.")])
        return f"checked {i}: {out.text}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        results = [m for m in messages if isinstance(m, lw.ToolMessage)]
        if crash_at is not None and len(results) == crash_at:
            raise _Crash("the agent's step")
        if len(results) == 4:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "checked all"})
        return lw.ModelOutput.for_tool_call("check", {"i": len(results)})

    return lw.react(
        name="g", tools=[check], model=lw.get_model("mock", outputs=respond), hooks=[_Guard()]
    )


async def test_a_hooks_and_a_tools_model_calls_are_not_the_step(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    checker = lw.get_model("mock", outputs=["ok"] * 50)
    with pytest.raises(_Crash):
        await lw.run(_guarded(2, checker), "Check.", db=db)
    [info] = lw.list_runs(db)
    point = resume_point(info.id, db)
    with lw.load_run(info.id, db) as log:
        models = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
        steps = [e for e in models if e.tools and e.span_id is None]  # the agent's calls
        # the guard's calls (top level, answered after the last step) and the checker's
        # (inside the tool calls) are recorded
        assert len(steps) == 3 and len(models) > len(steps) + 2
        assert models[-2].span_id is None and not models[-2].tools  # the last guard call
    assert point.last is not None and point.last.event_id == steps[-2].id
    assert [e.step for e in steps] == [True] * 3  # (marked) and the others are not
    assert all(not e.step for e in models if e not in steps)
    assert [c.function for c in point.last.output.tool_calls] == ["check"]
    assert set(point.last.results) == {point.last.output.tool_calls[0].id}
    state = await lw.resume(info.id, agent=_guarded(None, checker), db=db)
    assert state.completed == "submit"
    results = [m.content for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results == [f"checked {i}: ok" for i in range(4)] + ["checked all"]


def _running_elsewhere(db: Path, run_id: str, host: str, pid: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE runs SET status = 'running', host = ?, pid = ? WHERE id = ?",
            (host, pid, run_id),
        )
    conn.close()


def _sleeper() -> subprocess.Popen[bytes]:
    """A live process of this machine that is not this one."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


async def test_force_does_not_take_a_run_alive_on_this_machine(tmp_path: Path) -> None:
    db, requests = tmp_path / "runs.db", []
    with pytest.raises(_Crash):
        await lw.run(_compacting(requests, crash=True), "Work.", db=db)
    [info] = lw.list_runs(db)
    alive = _sleeper()
    try:
        _running_elsewhere(db, info.id, hostname(), alive.pid)
        assert lw.list_runs(db)[0].status == "running"
        for force in (False, True):
            with pytest.raises(lw.ConfigurationError, match=f"in process {alive.pid} on this"):
                await lw.resume(info.id, agent=_compacting([], crash=False), db=db, force=force)
        assert lw.list_runs(db)[0].status == "running"  # (untouched)
    finally:
        alive.kill()
        alive.wait()
    # on another machine: refused without force, taken with it
    _running_elsewhere(db, info.id, "another-host.invalid", os.getpid() + 1)
    with pytest.raises(lw.ConfigurationError, match="another machine"):
        await lw.resume(info.id, agent=_compacting(requests, crash=False), db=db)
    state = await lw.resume(info.id, agent=_compacting(requests, crash=False), db=db, force=True)
    assert state.completed == "submit" and lw.list_runs(db)[0].status == "success"


def _unmark(db: Path) -> None:
    """Make the run store one recorded before the loop marked its steps."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET data = json_remove(data, '$.step') WHERE type = 'model'")
    conn.close()


async def test_a_run_recorded_before_the_mark_goes_on_from_its_last_call(
    tmp_path: Path,
) -> None:
    """No call marked (an older run store, a loop that does not mark): the last answered
    top-level call is the step, as before; a resumed part that marks and stops before
    any step answered keeps that step."""
    db, requests = tmp_path / "runs.db", []
    with pytest.raises(_Crash):
        await lw.run(_compacting(requests, crash=True), "Work.", db=db)
    _unmark(db)
    [info] = lw.list_runs(db)
    point = resume_point(info.id, db)
    assert point.last is not None and not point.last.step
    with lw.load_run(info.id, db) as log:
        models = [e for e in log.events() if isinstance(e, lw.ModelEvent)]
        answered = [e for e in models if e.output is not None and e.error is None]
    assert point.last.event_id == answered[-1].id and not answered[-1].tools  # (the summary)

    # a resumed part (marking its steps) whose first live step fails: the step stays
    agent = _compacting([], crash=False, always=True)
    with pytest.raises(_Crash):
        await lw.resume(info.id, agent=agent, db=db, hooks=[_Guard()])
    with lw.load_run(info.id, db) as log:
        events = list(log.events())
    mark = next(i for i, e in enumerate(events) if isinstance(e, lw.InfoEvent))
    after = [e for e in events[mark:] if isinstance(e, lw.ModelEvent)]
    # in the resumed part: the guard's call (answered, not a step), then the step (failed)
    assert [(e.step, e.error is None) for e in after] == [(None, True), (True, False)]
    again = resume_point(info.id, db)
    assert again.resumes == 1 and again.last is not None
    assert again.last.event_id == point.last.event_id
