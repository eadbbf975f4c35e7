"""A 100,000-deep tool-call argument, end to end, with a real run store (issue 16.7).

The scripted model sends it natively, or as text for the ``react`` and ``json``
protocols. The run goes on (the model is told the arguments nest too deeply), the run
store records every step, and ``lw.load_run`` reads the run back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright._nesting import MAX_NESTING

DEPTH = 100_000

called: list[Any] = []


@lw.tool
def take(x: Any) -> str:
    """Take anything.

    Args:
        x: Anything.
    """
    called.append(x)
    return "ran"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": [value]} if _ % 2 else {"a": value}
    return value


def deep_text(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def first_reply(protocol: str) -> lw.ModelOutput | str:
    if protocol == "native":
        return lw.ModelOutput.for_tool_call("take", {"x": nested(DEPTH)})
    if protocol == "react":
        return f'Thought: deep.\nAction: take\nAction Input: {{"x": {deep_text(DEPTH)}}}'
    action = {"name": "take", "arguments": {"x": "PLACE"}}
    return json.dumps({"thought": "deep.", "action": action}).replace('"PLACE"', deep_text(DEPTH))


def last_reply(protocol: str) -> lw.ModelOutput | str:
    if protocol == "native":
        return lw.ModelOutput.for_tool_call("submit", {"answer": "done"})
    if protocol == "react":
        return "Thought: flat now.\nFinal Answer: done"
    return json.dumps({"action": {"name": "finish", "arguments": {"answer": "done"}}})


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_a_stored_run_survives_a_100_000_deep_argument(protocol: str, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    outputs = [first_reply(protocol), last_reply(protocol)]
    model = lw.get_model("mock", outputs=outputs, tool_protocol=protocol)
    called.clear()
    start = time.perf_counter()
    state = await lw.run(lw.react(tools=[take]), "go", model=model, db=db)
    assert state.completed == "submit" and state.text == "done"
    assert called == []
    # what the model is told next: a tool result (native, react), a format error (json)
    told = state.messages[2]
    assert f"more than {MAX_NESTING} levels" in told.content, told.content

    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.status == "success"
        messages = log.messages()
        calls = log.tool_events()
    assert time.perf_counter() - start < 20
    assert [m.id for m in messages] == [m.id for m in state.messages]
    deep_reply = messages[1]
    assert isinstance(deep_reply, lw.AssistantMessage)
    if protocol == "json":  # the whole reply is one JSON object: too deep to be an action
        assert not deep_reply.tool_calls
        error = deep_reply.format_error
    else:
        [deep_call] = deep_reply.tool_calls
        assert deep_call.function == "take" and deep_call.arguments == {}
        error = deep_call.parse_error
        assert any(e.call.function == "take" and e.error for e in calls.values())
    assert error is not None and f"more than {MAX_NESTING} levels" in error


def exactly(depth: int) -> Any:
    """Arguments nesting exactly ``depth`` objects (the arguments object is one)."""
    value: Any = 1
    for _ in range(depth - 1):
        value = {"a": value}
    return {"x": value}


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_arguments_at_the_bound_run_the_tool_and_are_stored(
    protocol: str, tmp_path: Path
) -> None:
    # one bound everywhere: what the model layer lets through, the tool takes (the
    # binder refused past 64 levels while Model.generate let 100 through), and the
    # store writes and reads back
    db = tmp_path / "runs.db"
    arguments = exactly(MAX_NESTING)
    first: lw.ModelOutput | str = {
        "native": lw.ModelOutput.for_tool_call("take", arguments),
        "react": f"Action: take\nAction Input: {json.dumps(arguments)}",
        # the action around the arguments does not count against their bound
        "json": json.dumps({"action": [{"name": "take", "arguments": arguments}]}),
    }[protocol]
    model = lw.get_model("mock", outputs=[first, last_reply(protocol)], tool_protocol=protocol)
    called.clear()
    state = await lw.run(lw.react(tools=[take]), "go", model=model, db=db)
    assert state.completed == "submit" and called == [arguments["x"]]
    with lw.load_run(state.run_id, db=db) as log:
        reply = log.messages()[1]
        [event] = [e for e in log.tool_events().values() if e.call.function == "take"]
    assert isinstance(reply, lw.AssistantMessage)
    assert reply.tool_calls[0].arguments == arguments and event.call.arguments == arguments
    assert event.error is None


async def test_the_scripted_model_copies_and_counts_deep_arguments_without_recursion() -> None:
    from loopwright.model.providers.mock import MockModelAPI

    deep = nested(DEPTH)
    api = MockModelAPI(outputs=[lw.ModelOutput.for_tool_call("take", {"x": deep})])
    out = await api.generate([lw.UserMessage(content="go")], [], lw.GenerateConfig())
    # every level is counted (the estimate was 0: repr gave up with RecursionError)
    assert out.usage is not None and out.usage.output_tokens > DEPTH
    # a copy all the way down: a tool changing it cannot change the script
    copied, original, levels = out.message.tool_calls[0].arguments["x"], deep, 0
    while isinstance(original, dict | list):
        assert copied is not original
        copied, original = copied["a"], original["a"]
        if isinstance(original, list):
            assert copied is not original
            copied, original = copied[0], original[0]
        levels += 1
    assert levels == DEPTH and copied == original == 1


async def test_a_deep_call_made_outside_the_model_is_stored_as_a_placeholder(
    tmp_path: Path,
) -> None:
    # Model.generate bounds what a model sends; a call built by an agent's own code (or
    # changed by an approver) reaches the tools and the store as it is. The store wrote
    # neither the message nor the tool event ("Maximum serialization depth exceeded")
    # and stopped the run.
    deep = {"x": nested(DEPTH)}

    async def agent(state: lw.AgentState) -> lw.AgentState:
        message = lw.AssistantMessage(tool_calls=[lw.ToolCall(function="take", arguments=deep)])
        state.messages.append(message)
        state.messages.extend(await lw.execute_tools(message, [take]))
        return state

    db = tmp_path / "runs.db"
    called.clear()
    state = await lw.run(agent, "go", model="mock", db=db)
    assert called == [] and state.messages[1].tool_calls[0].arguments["x"] is deep["x"]
    assert f"more than {MAX_NESTING} levels" in state.messages[2].content
    with lw.load_run(state.run_id, db=db) as log:
        assert log.info.status == "success"
        stored = log.messages()[1]
        [event] = log.tool_events().values()
    assert isinstance(stored, lw.AssistantMessage)
    for call in (stored.tool_calls[0], event.call):
        assert call.function == "take" and call.arguments == {}
        assert call.parse_error is not None and f"more than {MAX_NESTING}" in call.parse_error
    assert event.error is not None and "levels deep" in event.error.message


@pytest.mark.parametrize("protocol", ["react", "json"])
async def test_arguments_one_level_past_the_bound_are_a_parse_error(protocol: str) -> None:
    arguments = exactly(MAX_NESTING + 1)
    reply = {
        "react": f"Action: take\nAction Input: {json.dumps(arguments)}",
        "json": json.dumps({"action": {"name": "take", "arguments": arguments}}),
    }[protocol]
    model = lw.get_model("mock", outputs=[reply], tool_protocol=protocol)
    out = await model.generate([lw.UserMessage(content="go")], [take])
    [call] = out.message.tool_calls
    assert call.function == "take" and call.arguments == {}
    assert call.parse_error is not None and f"more than {MAX_NESTING} levels" in call.parse_error
