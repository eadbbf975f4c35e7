"""However an agent stops, its state stays a valid conversation, with the right tools."""

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import loopwright as lw

call = lw.ModelOutput.for_tool_call


@lw.tool
async def slow() -> str:
    """Slow."""
    await asyncio.sleep(5)
    return "done"


@lw.tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def unanswered(messages: Sequence[lw.ChatMessage]) -> list[str]:
    answered = {m.tool_call_id for m in messages if isinstance(m, lw.ToolMessage)}
    return [
        c.function
        for m in messages
        if isinstance(m, lw.AssistantMessage)
        for c in m.tool_calls
        if c.id not in answered
    ]


def reply_with(content: str, *calls: tuple[str, dict[str, Any]]) -> lw.ModelOutput:
    return lw.ModelOutput(
        message=lw.AssistantMessage(
            content=content, tool_calls=[lw.ToolCall(function=f, arguments=a) for f, a in calls]
        ),
        stop_reason="tool_calls",
    )


async def test_a_time_limit_during_tools_leaves_no_call_unanswered() -> None:
    model = lw.get_model("mock", outputs=[call("slow")])
    state = await lw.run(
        lw.react(tools=[slow]), "t", model=model, limits=[lw.time_limit(0.2)], db=False
    )
    assert state.completed == "limit"
    assert unanswered(state.messages) == []
    last = state.messages[-1]
    assert isinstance(last, lw.ToolMessage)
    assert last.error is not None
    assert last.error.type == "limit"


async def test_iterative_budget_ending_during_tools_leaves_no_call_unanswered() -> None:
    model = lw.get_model("mock", outputs=[call("slow")])
    agent = lw.iterative(tools=[slow], time_limit=0.2, progress_every=None)
    state = await lw.run(agent, "t", model=model, db=False)
    assert state.completed == "limit"
    assert unanswered(state.messages) == []


async def test_stop_keyword_with_tool_calls_leaves_no_call_unanswered() -> None:
    for agent in (
        lw.react(tools=[noop], stop_keywords=["DONE"]),
        lw.iterative(tools=[noop], stop_keywords=["DONE"], progress_every=None),
    ):
        model = lw.get_model("mock", outputs=[reply_with("DONE, one more thing", ("noop", {}))])
        state = await lw.run(agent, "t", model=model, db=False)
        assert state.completed == "stop_keyword"
        assert unanswered(state.messages) == []


async def test_submit_beside_a_handoff_leaves_no_call_unanswered() -> None:
    helper = lw.react(name="helper", submit=False)
    model = lw.get_model(
        "mock", outputs=[reply_with("", ("submit", {"answer": "42"}), ("transfer_to_helper", {}))]
    )
    state = await lw.run(lw.react(tools=[lw.handoff(helper)]), "t", model=model, db=False)
    assert state.completed == "submit"
    assert state.text == "42"
    assert unanswered(state.messages) == []


async def test_a_handoff_target_gets_the_run_tools_not_the_callers() -> None:
    @lw.tool
    def delete_everything() -> str:
        """Only the triage agent may call this."""
        return "deleted"

    @lw.tool
    def lookup() -> str:
        """A tool the run gives every agent."""
        return "found"

    offered: list[list[str]] = []

    def reply(messages: object, tools: Sequence[lw.ToolInfo], config: object) -> Any:
        offered.append(sorted(t.name for t in tools))
        return call("transfer_to_helper") if len(offered) == 1 else "helper answer"

    helper = lw.react(name="helper", submit=False)
    triage = lw.react(tools=[delete_everything, lw.handoff(helper)])
    state = await lw.run(
        triage, "t", model=lw.get_model("mock", outputs=reply), tools=[lookup], db=False
    )
    assert offered[0] == ["delete_everything", "lookup", "submit", "transfer_to_helper"]
    assert offered[1] == ["lookup"]
    assert state.completed == "handoff"


async def test_iterative_offers_the_run_tools() -> None:
    @lw.tool
    def extra() -> str:
        """Extra tool."""
        return "extra ran"

    model = lw.get_model("mock", outputs=[call("extra")])
    agent = lw.iterative(max_steps=1, progress_every=None)
    state = await lw.run(agent, "t", model=model, tools=[extra], db=False)
    assert [m.text for m in state.messages if m.role == "tool"] == ["extra ran"]


async def test_iterative_history_policy_runs_inside_the_budget() -> None:
    async def slow_summary(*_: object) -> str:
        await asyncio.sleep(3)
        return "summary"

    summariser = lw.get_model("mock", outputs=slow_summary)
    agent = lw.iterative(
        tools=[noop],
        time_limit=0.5,
        progress_every=None,
        history=lw.compact_when(max_messages=3, keep_last=1, model=summariser),
    )
    model = lw.get_model("mock", outputs=[call("noop")], repeat=True)
    start = time.monotonic()
    state = await lw.run(agent, "t", model=model, db=False)
    assert state.completed == "limit"
    assert time.monotonic() - start < 2.5  # the 3 s summary was cut at the budget
