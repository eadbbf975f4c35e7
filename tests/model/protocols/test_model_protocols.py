"""Protocols inside ``Model``: selection, what providers and hooks see, and whole loops."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, ReActProtocol

FAST = lw.GenerateConfig(retry_wait=0.001, max_retry_wait=0.01)


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


class NoTools(lw.ModelAPI):
    provider = "notools-test"
    supports_tools = False

    async def generate(
        self, messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: Any
    ) -> lw.ModelOutput:
        return lw.ModelOutput.from_text("hi")


# --- choosing a protocol ------------------------------------------------------------------


def test_native_is_the_default_where_the_provider_has_tool_calling() -> None:
    assert lw.get_model("mock").tool_protocol.name == "native"


def test_json_is_the_default_where_it_has_not() -> None:
    assert lw.Model(NoTools()).tool_protocol.name == "json"
    assert lw.Model(NoTools(), tool_protocol="react").tool_protocol.name == "react"


def test_native_for_a_provider_without_tool_calling_is_a_clear_error() -> None:
    with pytest.raises(lw.ConfigurationError, match="no native tool calling"):
        lw.Model(NoTools(), tool_protocol="native")


@pytest.mark.parametrize("name", ["react", "json", "native", " JSON "])
def test_get_model_takes_a_protocol_name(name: str) -> None:
    model = lw.get_model("mock", tool_protocol=name)
    assert model.tool_protocol.name == name.strip().lower()


def test_get_model_takes_a_protocol_instance() -> None:
    proto = ReActProtocol(answer_tool="done")
    assert lw.get_model("mock", tool_protocol=proto).tool_protocol is proto


@pytest.mark.parametrize("bad", ["xml", 3])
def test_an_unknown_protocol_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(lw.ConfigurationError, match="tool_protocol"):
        lw.get_model("mock", tool_protocol=bad)


def test_a_protocol_needs_a_model_name_not_a_model() -> None:
    model = lw.get_model("mock")
    with pytest.raises(lw.ConfigurationError, match="tool_protocol"):
        lw.get_model(model, tool_protocol="react")


def test_the_default_model_is_rebuilt_when_a_protocol_is_asked_for() -> None:
    with lw.default_model("mock"):
        assert lw.get_model(tool_protocol="json").tool_protocol.name == "json"


# --- inside generate ------------------------------------------------------------------------


async def test_the_provider_sees_the_rendered_request_and_hooks_the_conversation() -> None:
    seen: dict[str, Any] = {}

    def responder(
        messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: lw.GenerateConfig
    ) -> str:
        seen.update(messages=list(messages), tools=list(tools), config=config)
        return 'Thought: go\nAction: multiply\nAction Input: {"a": 2, "b": 3}\nObservation: 6'

    calls: list[tuple[str, list[lw.ChatMessage], list[lw.ToolInfo], Any]] = []

    class Record:
        def before_generate(self, call: lw.ModelCall) -> None:
            calls.append(("before", list(call.messages), list(call.tools), call.output))

        def after_generate(self, call: lw.ModelCall) -> None:
            calls.append(("after", list(call.messages), list(call.tools), call))

    model = lw.get_model("mock", outputs=responder, tool_protocol="react")
    conversation = [lw.UserMessage(content="2*3?")]
    with lw.model_hook(Record()):
        out = await model.generate(conversation, [multiply, add])

    assert seen["tools"] == []
    assert seen["config"].stop_seqs == ["Observation:"]
    assert seen["messages"][0].role == "system" and "multiply" in seen["messages"][0].content
    assert seen["messages"][1] is conversation[0]
    assert [c.function for c in out.tool_calls] == ["multiply"]
    assert out.message.reasoning == "go"
    for kind, messages, tools, _ in calls:
        assert messages == conversation, kind
        assert [t.name for t in tools] == ["multiply", "add"]
    call = calls[-1][3]
    assert call.output is out
    assert call.data["tool_protocol"] == "react"
    assert call.data["raw_text"].endswith("Observation: 6")
    assert model.usage.total_tokens > 0


async def test_retries_work_under_a_text_protocol() -> None:
    model = lw.get_model(
        "mock",
        outputs=[lw.ModelAPIError("busy", retryable=True), '{"thought": "t", "action": "add"}'],
        tool_protocol="json",
        config=FAST,
    )
    out = await model.generate([lw.UserMessage(content="x")], [add])
    assert lw.is_format_error(out)  # add needs arguments
    assert out.tool_calls[0].function == "add"


async def test_plain_generation_without_tools_is_untouched() -> None:
    model = lw.get_model("mock", outputs=["Paris."], tool_protocol="json")
    out = await model.generate([lw.UserMessage(content="Capital of France?")])
    assert out.text == "Paris." and out.tool_calls == []


# --- whole loops: the same task under every protocol --------------------------------------

TASK = "What is 465 * 321 + 95297?"
ANSWER = str(465 * 321 + 95297)


def _last_result(messages: Sequence[lw.ChatMessage]) -> str:
    """The latest tool result as the provider sees it, in any protocol."""
    last = messages[-1]
    if isinstance(last, lw.ToolMessage):
        return last.content
    text = last.content
    if text.startswith("Observation:"):
        return text.removeprefix("Observation:").strip()
    return str(json.loads(text)["observation"])


def calculator(protocol: str) -> Any:
    """A scripted model that reads each tool result and acts on it, in ``protocol``."""

    def act(thought: str, name: str, args: dict[str, Any]) -> lw.ModelOutput | str:
        if protocol == "native":
            return lw.ModelOutput.for_tool_call(name, args, content=thought)
        if protocol == "react":
            if name == "submit":
                return f"Thought: {thought}\nFinal Answer: {args['answer']}"
            return f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args)}"
        name = "finish" if name == "submit" else name
        return json.dumps({"thought": thought, "action": {"name": name, "arguments": args}})

    def respond(
        messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: Any
    ) -> lw.ModelOutput | str:
        step = sum(1 for m in messages if m.role == "assistant")
        if step == 0:
            a, b = map(int, re.findall(r"\d+", messages[-1].content)[:2])
            return act("First the product.", "multiply", {"a": a, "b": b})
        if step == 1:
            return act("Now the sum.", "add", {"a": int(_last_result(messages)), "b": 95297})
        return act("I know the answer.", "submit", {"answer": _last_result(messages)})

    return respond


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_a_hand_written_loop_completes_the_task_under_every_protocol(protocol: str) -> None:
    model = lw.get_model("mock", outputs=calculator(protocol), tool_protocol=protocol)
    tools = [multiply, add, lw.submit()]
    messages: list[lw.ChatMessage] = [lw.UserMessage(content=TASK)]
    answer = None
    for _ in range(5):
        out = await model.generate(messages, tools)
        messages.append(out.message)
        results = await lw.execute_tools(out.message, tools)
        messages.extend(results)
        if any(r.function == "submit" and r.error is None for r in results):
            answer = results[-1].content
            break
    assert answer == ANSWER
    assert [m.role for m in messages] == ["user", *["assistant", "tool"] * 3]
    assert all(m.error is None for m in messages if isinstance(m, lw.ToolMessage))


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_react_agent_completes_the_task_under_every_protocol(protocol: str) -> None:
    model = lw.get_model("mock", outputs=calculator(protocol), tool_protocol=protocol)
    agent = lw.react(prompt="You are a careful calculator.", tools=[multiply, add])
    state = await lw.run(agent, TASK, model=model)
    assert state.completed == "submit"
    assert state.output is not None and state.output.text == ANSWER
    calls = [
        c.function
        for m in state.messages
        if isinstance(m, lw.AssistantMessage)
        for c in m.tool_calls
    ]
    assert calls == ["multiply", "add", "submit"]
    thoughts = [
        m.reasoning or m.content for m in state.messages if isinstance(m, lw.AssistantMessage)
    ]
    assert thoughts == ["First the product.", "Now the sum.", "I know the answer."]


@pytest.mark.parametrize("protocol", ["react", "json"])
async def test_a_final_answer_without_submit_ends_a_submit_free_agent(protocol: str) -> None:
    reply = (
        "Final Answer: 0"
        if protocol == "react"
        else ('{"thought": "easy", "action": {"name": "finish", "arguments": {"answer": 0}}}')
    )
    model = lw.get_model("mock", outputs=[reply], tool_protocol=protocol)
    agent = lw.react(tools=[multiply], submit=False)
    state = await lw.run(agent, "zero?", model=model)
    assert state.completed == "answer"
    assert state.output is not None and state.output.text == "0"


@pytest.mark.parametrize("protocol", ["react", "json"])
async def test_format_errors_go_back_to_the_model_in_the_protocols_words(protocol: str) -> None:
    seen: list[list[lw.ChatMessage]] = []
    good = (
        "Final Answer: 42"
        if protocol == "react"
        else '{"thought": "ok", "action": {"name": "finish", "arguments": {"answer": "42"}}}'
    )
    replies = iter(["I think it is 42.", good])

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        seen.append(list(messages))
        return next(replies)

    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    state = await lw.run(lw.react(tools=[multiply]), "6*7?", model=model)
    assert state.completed == "submit"
    assert state.output is not None and state.output.text == "42"
    bad = state.messages[-4]
    assert isinstance(bad, lw.AssistantMessage) and lw.is_format_error(bad)
    # no fake tool call: the reply as written, then what was wrong, as a user message
    assert bad.tool_calls == [] and bad.content == "I think it is 42."
    feedback = state.messages[-3]
    assert isinstance(feedback, lw.UserMessage) and feedback.content == bad.format_error
    # the model saw its own reply, then what was wrong and the expected format, in the
    # protocol's words
    shown = seen[1]
    assert shown[-2].content == "I think it is 42."
    feedback = shown[-1].content
    if protocol == "react":
        assert feedback.startswith("Observation: Error: Your reply has no Action")
        assert "Action Input:" in feedback and "Could not parse" not in feedback
    else:
        error = json.loads(feedback)["error"]
        assert error.startswith("Your reply has no JSON object.")
        assert '"action"' in error


@pytest.mark.parametrize("protocol", ["react", "json"])
async def test_the_run_ends_after_too_many_format_errors_in_a_row(protocol: str) -> None:
    model = lw.get_model("mock", outputs=["no idea"], repeat=True, tool_protocol=protocol)
    state = await lw.run(
        lw.react(tools=[multiply], recovery=lw.Recovery(format_errors=2)), "?", model=model
    )
    assert state.completed == "format_errors"
    assert sum(1 for m in state.messages if isinstance(m, lw.AssistantMessage)) == 3


async def test_an_unknown_tool_is_reported_with_the_valid_names() -> None:
    replies = iter(['Action: calculator\nAction Input: {"x": 1}', "Final Answer: done"])
    seen: list[list[lw.ChatMessage]] = []

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        seen.append(list(messages))
        return next(replies)

    model = lw.get_model("mock", outputs=respond, tool_protocol="react")
    state = await lw.run(lw.react(tools=[multiply, add]), "?", model=model)
    assert state.completed == "submit"
    feedback = seen[1][-1].content
    assert feedback.startswith("Observation: Error")
    assert "calculator" in feedback and "multiply" in feedback and "add" in feedback


async def test_a_long_run_keeps_the_rendered_prefix_stable() -> None:
    requests: list[list[lw.ChatMessage]] = []
    steps = 25

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        requests.append(list(messages))
        n = len(requests)
        if n > steps:
            return '{"thought": "done", "action": {"name": "finish", "arguments": {"answer": "x"}}}'
        return json.dumps(
            {"thought": f"step {n}", "action": {"name": "add", "arguments": {"a": n, "b": 1}}}
        )

    model = lw.get_model("mock", outputs=respond, tool_protocol=JsonProtocol())
    state = await lw.run(lw.react(tools=[add], max_steps=None), "count", model=model)
    assert state.completed == "submit"
    for before, after in itertools.pairwise(requests):
        assert len(after) == len(before) + 2
        assert all(a is b for a, b in zip(before, after, strict=False))
        assert [m.model_dump_json() for m in before] == [
            m.model_dump_json() for m in after[: len(before)]
        ]
