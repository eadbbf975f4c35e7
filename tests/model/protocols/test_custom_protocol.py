"""A new text protocol is one small class implementing the format contract; registered by
name, it runs a whole agent and gets the incremental, prefix-stable rendering for free."""

import json
from collections.abc import Sequence
from typing import Any

import pytest

import loopwright as lw
from loopwright.model.protocols import Reply, TextProtocol, ToolSet, _registry

from .test_incremental import counting


class XmlProtocol(TextProtocol):
    """``thought <action name="tool">{json arguments}</action>``; results as ``<result>``."""

    name = "xml"
    stop_seqs = ("<result>",)

    def render_assistant(self, message: lw.AssistantMessage, toolset: ToolSet | None) -> str:
        thought = message.reasoning or (message.content if message.tool_calls else "")
        actions = "".join(
            f'<action name="{c.function}">{json.dumps(c.arguments)}</action>'
            for c in message.tool_calls
        )
        return f"{thought}\n{actions}".strip() if actions else message.content

    def render_observation(self, message: lw.ToolMessage) -> str:
        return f"<result>{self.observation_text(message)}</result>"

    def parse_reply(self, text: str, toolset: ToolSet, stop_reason: lw.StopReason) -> Reply:
        start = text.find('<action name="')
        head = text.find('">', start)
        end = text.find("</action>", head)
        if start < 0 or head < 0 or end < 0:
            return self.format_error("Your reply has no <action>.", toolset, text)
        name, raw = text[start + 14 : head], text[head + 2 : end]
        thought = text[:start].strip() or None
        return self.action(name, raw, toolset, thought, text[: end + 9], stop_reason)

    def format_reminder(self, toolset: ToolSet) -> str:
        names = ", ".join(t.name for t in toolset.visible)
        return f'Reply: <thought> <action name="one of: {names}">{{"arg": ...}}</action>'


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


async def test_a_small_protocol_runs_an_agent_with_incremental_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_registry, "_protocols", _registry._protocols.copy())
    lw.register_protocol("xml", XmlProtocol)
    steps = 40
    seen: list[Sequence[lw.ChatMessage]] = []

    def respond(messages: Sequence[lw.ChatMessage], tools: Any, config: Any) -> str:
        seen.append(list(messages))
        n = len(seen)
        if n == 1:
            return "I will multiply."  # no action: a format error, told back to the model
        if n <= steps:
            return f'Step {n}. <action name="multiply">{{"a": {n}, "b": 2}}</action>'
        return '<action name="submit">{"answer": "done"}</action><result>invented'

    model = lw.get_model("mock", outputs=respond, tool_protocol="xml")
    protocol = model.tool_protocol
    assert isinstance(protocol, XmlProtocol)
    walked = counting(protocol)
    state = await lw.run(lw.react(tools=[multiply], max_steps=100), "Multiply.", model=model)

    assert state.output is not None and state.output.text == "done"
    # the format is in the system prompt (the default template); the model sees its own
    # turns in its format, results as <result>, and what was wrong with a bad reply
    assert '<action name="one of: multiply' in seen[-1][0].content
    text = "\n".join(m.content for m in seen[-1])
    assert 'Step 2. <action name="multiply">{"a": 2, "b": 2}</action>' in text
    assert "<result>4</result>" in text
    assert "<result>Your reply has no <action>." in text
    # each request rendered only its new messages; earlier ones are the same objects
    assert len(seen) == steps + 1 and max(walked[-10:]) <= 3
    before, after = seen[-2], seen[-1]
    assert all(a is b for a, b in zip(before[:-1], after[: len(before) - 1], strict=True))


def test_examples_and_the_prompt_come_from_the_contract() -> None:
    examples = [lw.ActionExample.of(multiply, {"a": 1, "b": 2}, thought="First."),
                lw.ActionExample("finish", {"answer": "2"})]  # fmt: skip
    tools = [multiply.info, lw.submit().info]
    system = XmlProtocol(examples=examples).render([], tools, lw.GenerateConfig()).messages[0]
    assert 'First.\n<action name="multiply">{"a": 1, "b": 2}</action>' in system.content
    assert '<action name="submit">{"answer": "2"}</action>' in system.content
    assert "Reply: <thought>" in system.content and "multiply: Multiply two" in system.content
