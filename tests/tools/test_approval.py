"""Approval of tool calls inside ``execute_tools``: every decision."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

import loopwright as lw
from loopwright.tools import Approval, approver

runs: list[tuple[str, dict[str, Any]]] = []


@lw.tool
def delete(path: str) -> str:
    """Delete a file."""
    runs.append(("delete", {"path": path}))
    return f"deleted {path}"


@lw.tool
def archive(path: str) -> str:
    """Archive a file."""
    runs.append(("archive", {"path": path}))
    return f"archived {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    runs.clear()


def call(name: str = "delete", **args: Any) -> lw.ToolCall:
    if name in ("fast", "slow"):
        return lw.ToolCall(function=name)
    return lw.ToolCall(function=name, arguments=args or {"path": "a.txt"})


def answer(approval: Approval, seen: list[Any] | None = None) -> Any:
    async def policy(c: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
        if seen is not None:
            seen.append((c, list(messages)))
        return approval

    return policy


class Record:
    def __init__(self) -> None:
        self.done: list[lw.ToolExecution] = []

    def before_tool(self, ex: lw.ToolExecution) -> None:
        pass

    def after_tool(self, ex: lw.ToolExecution) -> None:
        self.done.append(ex)


async def test_approve_runs_the_call_and_the_policy_sees_call_and_conversation() -> None:
    seen: list[Any] = []
    history: list[lw.ChatMessage] = [lw.UserMessage(content="clean up")]
    msg = lw.AssistantMessage(tool_calls=[call()])
    rec = Record()
    ok = Approval(decision="approve", approver="auto")
    with approver(answer(ok, seen)), lw.tool_hook(rec):
        [result] = await lw.execute_tools(msg, [delete], messages=[*history, msg])
    assert result.content == "deleted a.txt"
    assert seen == [(msg.tool_calls[0], [*history, msg])]
    assert rec.done[0].approval == ok
    assert runs == [("delete", {"path": "a.txt"})]


async def test_without_a_policy_every_call_runs() -> None:
    [result] = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert result.content == "deleted a.txt"


async def test_modify_runs_the_modified_call_and_answers_the_original() -> None:
    original = call(path="/etc/passwd")
    modified = lw.ToolCall(id=original.id, function="archive", arguments={"path": "safe.txt"})
    with approver(answer(Approval(decision="modify", modified=modified))):
        [result] = await lw.execute_tools(
            lw.AssistantMessage(tool_calls=[original]), [delete, archive]
        )
    assert runs == [("archive", {"path": "safe.txt"})]
    assert result.content == "archived safe.txt"
    assert (result.tool_call_id, result.function) == (original.id, "delete")


async def test_modified_call_is_validated() -> None:
    bad = lw.ToolCall(function="delete", arguments={"path": 1, "force": True})
    with approver(answer(Approval(decision="modify", modified=bad))):
        [result] = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert result.error is not None and result.error.type == "validation"
    assert "force: unexpected argument" in result.content
    unknown = lw.ToolCall(function="shred", arguments={})
    with approver(answer(Approval(decision="modify", modified=unknown))):
        [result] = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert result.error is not None and result.error.type == "unknown_tool"
    assert runs == []


async def test_modify_without_a_modified_call_is_a_bug_in_the_policy() -> None:
    with (
        approver(answer(Approval(decision="modify"))),
        pytest.raises(lw.ConfigurationError, match="answered 'modify' without a modified call"),
    ):
        await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])


async def test_reject_tells_the_model_why() -> None:
    rejection = Approval(decision="reject", explanation="deleting is not allowed", approver="prod")
    with approver(answer(rejection)):
        results = await lw.execute_tools(
            lw.AssistantMessage(tool_calls=[call(), call("archive")]), [delete, archive]
        )
    assert results[0].error == lw.ToolCallError(
        type="approval", message="The call was rejected by prod: deleting is not allowed"
    )
    assert results[1].error is not None  # the same policy rejected the second call too
    assert runs == []


async def test_reject_without_explanation() -> None:
    with approver(answer(Approval(decision="reject"))):
        [result] = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert result.content == "The call was rejected."


async def test_escalate_reaching_execution_is_a_rejection() -> None:
    with approver(answer(Approval(decision="escalate", explanation="needs a human"))):
        [result] = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert result.error == lw.ToolCallError(
        type="approval",
        message="The call was not approved: no approval policy accepted it: needs a human",
    )
    assert runs == []


async def test_terminate_raises_after_cleaning_up_with_earlier_results() -> None:
    cancelled = asyncio.Event()

    @lw.tool(parallel=True)
    async def slow() -> str:
        """Slow."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    @lw.tool(parallel=True)
    async def fast() -> str:
        """Fast."""
        return "fast"

    async def policy(c: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
        if c.function == "delete":
            await asyncio.sleep(0.05)  # let the fast call finish first
            return Approval(decision="terminate", explanation="destructive", approver="prod")
        return Approval(decision="approve")

    # archive is not parallel, the others are: [archive] [fast, slow, delete] [archive]
    par_delete = lw.tool_with(delete, parallel=True)
    msg = lw.AssistantMessage(
        tool_calls=[call("archive"), call("fast"), call("slow"), call("delete"), call("archive")]
    )
    runs.clear()
    rec = Record()
    with approver(policy), lw.tool_hook(rec), pytest.raises(lw.ToolTerminated) as info:
        await lw.execute_tools(msg, [par_delete, archive, slow, fast])
    err = info.value
    assert err.explanation == "destructive"
    assert err.call is msg.tool_calls[3]
    assert err.approval is not None and err.approval.approver == "prod"
    assert [m.content for m in err.messages] == ["archived a.txt", "fast"]
    assert str(err) == (
        "The approval policy (prod) ended the run at the call of tool 'delete' "
        f"(call id {msg.tool_calls[3].id}): destructive."
    )
    assert cancelled.is_set()  # the slow sibling was cancelled
    assert runs == [("archive", {"path": "a.txt"})]  # the last archive never ran
    errors = {ex.call.function: type(ex.error).__name__ for ex in rec.done}
    assert errors == {
        "archive": "NoneType",
        "fast": "NoneType",
        "slow": "CancelledError",
        "delete": "ToolTerminated",
    }


async def test_calls_that_cannot_run_are_not_shown_to_the_policy() -> None:
    seen: list[Any] = []
    msg = lw.AssistantMessage(
        tool_calls=[
            lw.ToolCall(function="nope"),
            lw.ToolCall(function="delete", parse_error="bad json"),
            lw.ToolCall(function="delete", arguments={}),
        ]
    )
    with approver(answer(Approval(decision="approve"), seen)):
        results = await lw.execute_tools(msg, [delete])
    assert [r.error.type for r in results if r.error] == ["unknown_tool", "parsing", "validation"]
    assert seen == []


async def test_time_waiting_for_approval_is_recorded() -> None:
    async def slow_human(c: lw.ToolCall, messages: Sequence[lw.ChatMessage]) -> Approval:
        await asyncio.sleep(0.2)
        return Approval(decision="approve")

    rec = Record()
    with approver(slow_human), lw.tool_hook(rec):
        await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    [ex] = rec.done
    assert ex.wait_time >= 0.15
    assert ex.duration >= ex.wait_time


async def test_an_approver_must_answer_with_an_approval() -> None:
    async def sloppy(call: lw.ToolCall, messages: object) -> Any:
        return "approve"

    with approver(sloppy), pytest.raises(lw.ConfigurationError, match="must return an Approval"):
        await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete])
    assert runs == []


async def test_modify_may_not_redirect_a_call_to_a_terminal_tool() -> None:
    from loopwright.tools.builtin import submit

    forced = lw.ToolCall(function="submit", arguments={"answer": "forced"})
    with (
        approver(answer(Approval(decision="modify", modified=forced))),
        pytest.raises(lw.ConfigurationError, match="not to a terminal one"),
    ):
        await lw.execute_tools(lw.AssistantMessage(tool_calls=[call()]), [delete, submit()])
