"""A person's decision is about one call: the model cannot run it again by repeating
the call (its id and arguments) in a later step of the continued run, nor in a later
continuation."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw

ran: list[str] = []


@lw.tool
def deploy(env: str) -> str:
    """Deploy.

    Args:
        env: Where.
    """
    ran.append(env)
    return f"deployed {env}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _call(call_id: str = "c0", env: str = "prod") -> lw.ModelOutput:
    call = lw.ToolCall(id=call_id, function="deploy", arguments={"env": env})
    return lw.ModelOutput(message=lw.AssistantMessage(tool_calls=[call]), model="mock")


async def test_an_approval_runs_its_call_once_though_the_model_repeats_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    policy = lw.defer_approval("deploy")
    agent = lw.react(tools=[deploy], submit=False, model=lw.get_model("mock", outputs=[_call()]))
    state = await lw.run(agent, "go", db=db, approval=policy)
    assert state.completed == "waiting" and ran == []
    lw.approve(state.run_id or "", all=True, db=db)
    # the model asks for the same call (same id, same arguments) in each later step
    live = lw.get_model("mock", outputs=[_call(), _call(), "done"])
    state = await lw.resume(state.run_id or "", agent=agent, model=live, db=db, approval=policy)
    assert ran == ["prod"]  # approved once: run once
    assert state.completed == "waiting"  # the repeat waits for a decision of its own
    [again] = lw.pending_calls(state.run_id or "", db=db)
    assert again.call_id == "c0" and again.state == "pending"


async def test_a_decision_applied_before_does_not_approve_a_repeat_in_a_later_continuation(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    policy = lw.defer_approval("deploy")
    agent = lw.react(tools=[deploy], submit=False, model=lw.get_model("mock", outputs=[_call()]))
    state = await lw.run(agent, "go", db=db, approval=policy)
    run_id = state.run_id or ""
    lw.approve(run_id, all=True, db=db)
    # first continuation: c0 runs, then another call waits
    live = lw.get_model("mock", outputs=[_call("d1", "staging")])
    state = await lw.resume(run_id, agent=agent, model=live, db=db, approval=policy)
    assert state.completed == "waiting" and ran == ["prod"]
    lw.approve(run_id, approve=["d1"], db=db)
    # second continuation: d1 runs, then the model repeats c0 (decided long ago)
    live = lw.get_model("mock", outputs=[_call(), "done"])
    state = await lw.resume(run_id, agent=agent, model=live, db=db, approval=policy)
    assert ran == ["prod", "staging"]
    assert state.completed == "waiting"
    assert [c.call_id for c in lw.pending_calls(run_id, db=db)] == ["c0"]
