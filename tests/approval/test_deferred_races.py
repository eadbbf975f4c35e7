"""Deciding while a continuation starts, decisions kept across deferrals, and calls no
one was asked about (issue 21). Real SQLite files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
import loopwright.runtime._resume as resume_module
from loopwright.log._approvals import deferred_calls, record_pending
from loopwright.tools import PendingCall, arguments_hash

ran: list[str] = []


@lw.tool
def deploy(host: str) -> str:
    """Deploy.

    Args:
        host: Where.
    """
    ran.append(host)
    return f"deployed {host}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _respond(messages: list[lw.ChatMessage], tools: Any, config: Any) -> lw.ModelOutput:
    if any(isinstance(m, lw.ToolMessage) for m in messages):
        return lw.ModelOutput.from_text("done")
    calls = [
        lw.ToolCall(id="a", function="deploy", arguments={"host": "a"}),
        lw.ToolCall(id="b", function="deploy", arguments={"host": "b"}),
    ]
    return lw.ModelOutput(message=lw.AssistantMessage(tool_calls=calls), stop_reason="tool_calls")


def _agent() -> lw.ReactAgent:
    model = lw.get_model("mock", outputs=_respond)
    return lw.react(name="d", tools=[deploy], model=model, submit=False)


async def _waiting(db: Path) -> str:
    state = await lw.run(_agent(), "ship", db=db, approval=lw.defer_approval("deploy"))
    # sequential calls: "a" is deferred, "b" after it is neither asked about nor run
    assert state.completed == "waiting" and [p.call.id for p in state.pending] == ["a"]
    assert state.run_id is not None
    return state.run_id


async def test_a_decision_while_a_continuation_starts_is_refused_not_erased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    run_id = await _waiting(db)
    original = resume_module.continuation_approver
    refused: list[str] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        try:  # another process decides now, after the claim, before the reopening
            lw.approve(run_id, approve=["a"], db=db)
        except lw.ApprovalRefused as ex:
            refused.append(str(ex))
        return out

    monkeypatch.setattr(resume_module, "continuation_approver", racing)
    state = await lw.resume(run_id, agent=_agent(), db=db, approval=lw.defer_approval("deploy"))
    assert refused and "being continued" in refused[0]
    assert state.completed == "waiting" and ran == []
    [row] = deferred_calls(db, run_id)
    assert row.state == "pending" and row.decision is None  # asked again, decidable
    monkeypatch.setattr(resume_module, "continuation_approver", original)
    lw.approve(run_id, approve=["a"], db=db)
    state = await lw.resume(run_id, agent=_agent(), db=db, approval=lw.defer_approval("deploy"))
    assert ran == ["a"] and state.completed == "waiting"  # "b" now asked: deferred


async def test_a_continuation_failing_before_it_begins_leaves_the_run_waiting(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    run_id = await _waiting(db)
    lw.approve(run_id, approve=["a"], db=db)
    with pytest.raises(lw.ConfigurationError):
        await lw.resume(run_id, agent=_agent(), db=db, approval=lw.defer_approval("deploy"),
                        sandbox="no-such-sandbox")  # fmt: skip
    assert lw.list_runs(db)[0].status == "waiting"
    state = await lw.resume(run_id, agent=_agent(), db=db, approval=lw.defer_approval("deploy"))
    assert ran == ["a"] and [p.call.id for p in state.pending] == ["b"]


def test_deferring_again_keeps_a_decision_not_yet_applied_for_those_arguments(
    tmp_path: Path,
) -> None:
    import sqlite3

    db = tmp_path / "runs.db"
    call = lw.ToolCall(id="a", function="deploy", arguments={"host": "a"})
    digest = arguments_hash(call)
    record_pending(db, "r", [PendingCall(call=call, arguments_hash=digest, approver="defer")])
    with sqlite3.connect(db) as conn:  # a decision that landed meanwhile
        conn.execute(
            "UPDATE approvals SET state = 'decided', decision = 'approve', decided_hash = ?",
            (digest,),
        )
    record_pending(db, "r", [PendingCall(call=call, arguments_hash=digest, approver="defer")])
    [row] = deferred_calls(db, "r")
    assert row.state == "decided" and row.decision == "approve" and row.decided_hash == digest
    other = call.model_copy(update={"arguments": {"host": "z"}})
    pending = PendingCall(call=other, arguments_hash=arguments_hash(other), approver="defer")
    record_pending(db, "r", [pending])  # other arguments: the decision was not for them
    [row] = deferred_calls(db, "r")
    assert row.state == "pending" and row.decision is None and row.call.arguments == {"host": "z"}


async def test_continuing_without_a_policy_defers_calls_no_one_was_asked_about(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    run_id = await _waiting(db)
    lw.approve(run_id, approve=["a"], db=db)
    state = await lw.resume(run_id, agent=_agent(), db=db)  # no approval=
    assert ran == ["a"]  # approved by the person; "b" was never shown to anyone
    assert state.completed == "waiting" and [p.call.id for p in state.pending] == ["b"]
    lw.approve(run_id, approve=["b"], db=db)
    state = await lw.resume(run_id, agent=_agent(), db=db)
    assert ran == ["a", "b"] and state.completed == "answer"
