"""A sample whose code raises ``CancelledError`` without anyone cancelling it (a
library's stray one) fails as that sample, counted; it does not end its worker, which
left the samples after it unrun while the eval said ``success``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import loopwright as lw


@pytest.mark.parametrize("where", ["scorer", "agent"])
async def test_a_stray_cancelled_error_fails_its_sample_only(tmp_path: Path, where: str) -> None:
    @lw.scorer(name="s")
    async def score(state: lw.AgentState, sample: lw.Sample) -> float:
        if where == "scorer" and sample.id == "b":
            raise asyncio.CancelledError()
        return 1.0

    inner = lw.react(submit=False)

    async def agent(state: lw.AgentState) -> lw.AgentState:
        if where == "agent" and state.messages[-1].text == "b":
            raise asyncio.CancelledError()
        return await inner(state)

    task = lw.Task(
        [{"id": i, "input": i, "target": "4"} for i in "abcd"], agent=agent, scorer=score, name="t"
    )
    model = lw.get_model("mock", outputs=lambda m, t, c: "4")
    db = tmp_path / "runs.db"
    [result] = await lw.eval_async(task, model=model, db=db, max_samples=1)
    assert sorted((s.id, s.status) for s in result.samples) == [
        ("a", "success"),
        ("b", "error"),
        ("c", "success"),
        ("d", "success"),
    ]
    assert "CancelledError" in (result.samples[1].error or "")
    assert (result.completed, result.errors, result.status) == (4, 1, "success")
    with lw.load_run(result.run_id or "", db=db) as log:
        assert {s.id: s.status for s in log.samples}["b"] == "error"


def test_a_stray_cancelled_error_in_one_rollout_loses_no_other() -> None:
    inner = lw.react(submit=False)

    async def agent(state: lw.AgentState) -> lw.AgentState:
        if state.messages[-1].text == "n3":
            raise asyncio.CancelledError()
        return await inner(state)

    with lw.default_model(lw.get_model("mock", outputs=lambda m, t, c: "ok")):
        states = lw.rollouts(agent, [f"n{i}" for i in range(6)], max_concurrency=2)
    assert [s.error is None for s in states] == [True, True, True, False, True, True]
    assert "CancelledError" in (states[3].error or "")
    assert all(s.text == "ok" for i, s in enumerate(states) if i != 3)
