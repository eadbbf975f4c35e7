"""Tool-call ids come from the model and may repeat: every reply's calls get unique ids
before anything keys results, approvals or recorded answers by them (issue 21)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.log._approvals import deferred_calls

ran: list[str] = []


@lw.tool(parallel=True)
async def deploy(host: str) -> str:
    """Deploy.

    Args:
        host: Where.
    """
    ran.append(host)
    return f"deployed {host}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _twice(call_id: str) -> lw.ModelOutput:
    calls = [
        lw.ToolCall(id=call_id, function="deploy", arguments={"host": "staging"}),
        lw.ToolCall(id=call_id, function="deploy", arguments={"host": "prod"}),
    ]
    return lw.ModelOutput(message=lw.AssistantMessage(tool_calls=calls), stop_reason="tool_calls")


def _respond(call_id: str) -> Any:
    def answer(messages: list[lw.ChatMessage], tools: Any, config: Any) -> lw.ModelOutput:
        results = [m.text for m in messages if isinstance(m, lw.ToolMessage)]
        if results:
            return lw.ModelOutput.from_text(" | ".join(results))
        return _twice(call_id)

    return answer


@pytest.mark.parametrize("call_id", ["call_1", ""])
async def test_calls_sharing_an_id_are_each_deferred_approved_and_run_once(
    tmp_path: Path, call_id: str
) -> None:
    db = tmp_path / "runs.db"

    def agent() -> lw.ReactAgent:
        model = lw.get_model("mock", outputs=_respond(call_id))
        return lw.react(name="d", tools=[deploy], model=model, submit=False)

    state = await lw.run(agent(), "ship", db=db, approval=lw.defer_approval("deploy"))
    assert state.completed == "waiting" and ran == []
    ids = [p.call.id for p in state.pending]
    assert len(set(ids)) == 2 and all(ids)
    stored = deferred_calls(db, state.run_id)
    assert sorted(c.call.arguments["host"] for c in stored) == ["prod", "staging"]
    assert all(c.state == "pending" for c in stored)
    lw.approve(state.run_id, all=True, db=db)
    state = await lw.resume(
        state.run_id, agent=agent(), db=db, approval=lw.defer_approval("deploy")
    )
    assert state.completed == "answer" and sorted(ran) == ["prod", "staging"]
    assert state.text == "deployed staging | deployed prod"
    assert all(c.state == "applied" for c in deferred_calls(db, state.run_id))


async def test_a_reply_with_unique_ids_keeps_them() -> None:
    calls = [lw.ToolCall(id=f"c{i}", function="deploy", arguments={"host": "x"}) for i in (1, 2)]
    reply = lw.ModelOutput(message=lw.AssistantMessage(tool_calls=calls))
    out = await lw.get_model("mock", outputs=[reply]).generate([lw.UserMessage(content="go")])
    assert [c.id for c in out.message.tool_calls] == ["c1", "c2"]


@pytest.mark.parametrize(
    ("protocol", "text", "final"),
    [
        (
            "json",
            '{"tool": "deploy", "arguments": {"host": "prod"}}',
            '{"tool": "submit", "arguments": {"answer": "done"}}',
        ),
        ("react", 'Action: deploy\nAction Input: {"host": "prod"}', "Final Answer: done"),
    ],
)
async def test_text_protocol_calls_get_unique_ids_across_replies(
    protocol: str, text: str, final: str
) -> None:
    model = lw.get_model("mock", outputs=[text, text, final], tool_protocol=protocol)
    state = await lw.run(lw.react(tools=[deploy], max_steps=5), "go", model=model, db=False)
    assert state.completed == "submit" and state.text == "done"
    calls = [c for m in state.messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls]
    assert len(calls) == 3 and len({c.id for c in calls}) == 3 and ran == ["prod", "prod"]
    answered = [m.tool_call_id for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert answered == [c.id for c in calls]


async def test_an_agent_deferring_two_calls_with_one_id_is_an_error_not_a_lost_call(
    tmp_path: Path,
) -> None:
    from loopwright.tools import PendingCall, arguments_hash

    async def agent(state: lw.AgentState) -> lw.AgentState:  # its own calls, no model
        message = _twice("same").message
        state.messages.append(message)
        state.pending = [
            PendingCall(call=c, arguments_hash=arguments_hash(c), approver="defer")
            for c in message.tool_calls
        ]
        state.completed = "waiting"
        return state

    with pytest.raises(ValueError, match="share an id"):
        await lw.run(agent, "go", db=tmp_path / "runs.db")
    assert deferred_calls(tmp_path / "runs.db", lw.list_runs(tmp_path / "runs.db")[0].id) == []
