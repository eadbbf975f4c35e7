"""``llm_fallback``: a tool answering sub-questions with a model's own knowledge."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

import loopwright as lw
from loopwright.tools.builtin._llm_fallback import DEFAULT_FALLBACK_PROMPT, llm_fallback


def test_its_schema_asks_for_one_question() -> None:
    info = llm_fallback().info
    assert info.name == "llm_fallback"
    assert info.parameters["required"] == ["question"]
    assert info.parameters["properties"]["question"]["type"] == "string"
    assert "general knowledge" in info.description
    assert llm_fallback(name="ask_llm").name == "ask_llm"


def test_it_is_off_by_default() -> None:
    agent = lw.react(tools=[])
    assert [t.name for t in agent.offered] == ["submit"]


async def test_it_asks_the_default_model_with_a_short_prompt_and_no_tools() -> None:
    seen: list[tuple[list[lw.ChatMessage], list[lw.ToolInfo]]] = []

    def respond(messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], cfg: Any) -> str:
        seen.append((list(messages), list(tools)))
        return "  Paris.\n"

    with lw.default_model(lw.get_model("mock", outputs=respond)):
        answer = await llm_fallback()(question="What is the capital of France?")
    assert answer == "Paris."
    ((messages, tools),) = seen
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content == DEFAULT_FALLBACK_PROMPT
    assert messages[1].content == "What is the capital of France?"
    assert tools == []


async def test_a_given_model_and_prompt_are_used() -> None:
    model = lw.get_model("mock", outputs=["<think>hmm</think>42"])
    fallback = llm_fallback(model, prompt="Be terse.")
    with lw.default_model(lw.get_model("mock", outputs=[RuntimeError("not this one")])):
        assert await fallback(question="6*7?") == "42"


async def test_an_empty_answer_is_an_error_for_the_model() -> None:
    tool = llm_fallback(lw.get_model("mock", outputs=["   "]))
    call = lw.ToolCall(function="llm_fallback", arguments={"question": "?"})
    (result,) = await lw.execute_tools(lw.AssistantMessage(tool_calls=[call]), [tool])
    assert result.error is not None and result.error.type == "tool_error"
    assert "no answer" in result.content


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_an_agent_uses_it_under_every_protocol(protocol: str) -> None:
    def agent_step(messages: Sequence[lw.ChatMessage]) -> lw.ModelOutput | str:
        if any(m.role == "assistant" for m in messages):
            # the fallback's answer must have reached the model as the latest result
            answer = "Paris" if "Paris." in messages[-1].content else "lost"
            name, args = "submit", {"answer": answer}
        else:
            name, args = "llm_fallback", {"question": "What is the capital of France?"}
        if protocol == "native":
            return lw.ModelOutput.for_tool_call(name, args)
        if protocol == "react":
            if name == "submit":
                return f"Final Answer: {args['answer']}"
            return f"Action: {name}\nAction Input: {json.dumps(args)}"
        name = "finish" if name == "submit" else name
        return json.dumps({"thought": "t", "action": {"name": name, "arguments": args}})

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, cfg: Any) -> lw.ModelOutput | str:
        if messages[0].content == DEFAULT_FALLBACK_PROMPT:
            assert cfg.response_schema is None and not cfg.stop_seqs  # a plain question
            return "Paris."
        return agent_step(messages)

    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    state = await lw.run(lw.react(tools=[llm_fallback()]), "Capital of France?", model=model)
    assert state.completed == "submit"
    assert state.output is not None and state.output.text == "Paris"
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert [(r.function, r.content) for r in results] == [
        ("llm_fallback", "Paris."),
        ("submit", "Paris"),
    ]
