"""Tools and a parse helper shared by the protocol tests."""

from __future__ import annotations

from collections.abc import Sequence

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, ReActProtocol, ToolProtocol

MULTIPLY = lw.ToolInfo(
    name="multiply",
    description="Multiply two numbers.",
    parameters={
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first factor."},
            "b": {"type": "integer", "description": "The second factor."},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
SEARCH = lw.ToolInfo(
    name="web_search",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for."}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
CLOCK = lw.ToolInfo(
    name="clock",
    description="The current time.",
    parameters={"type": "object", "properties": {}, "required": []},
)
SUBMIT = lw.ToolInfo(
    name="submit",
    description="Submit the final answer.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
TOOLS = [MULTIPLY, SEARCH, CLOCK, SUBMIT]
NO_SUBMIT = [MULTIPLY, SEARCH, CLOCK]

PROTOCOLS = {"react": ReActProtocol, "json": JsonProtocol}


def parse(
    protocol: ToolProtocol,
    text: str,
    tools: Sequence[lw.ToolInfo] = TOOLS,
    *,
    stop_reason: lw.StopReason = "stop",
    messages: Sequence[lw.ChatMessage] | None = None,
) -> lw.ModelOutput:
    """Render a request with ``tools`` and parse ``text`` as the provider's reply."""
    history = list(messages or [lw.UserMessage(content="task")])
    request = protocol.render(history, tools, lw.GenerateConfig())
    return protocol.parse(lw.ModelOutput.from_text(text, stop_reason=stop_reason), request)


def only_call(output: lw.ModelOutput) -> lw.ToolCall:
    assert len(output.tool_calls) == 1, output.tool_calls
    return output.tool_calls[0]


def error_of(output: lw.ModelOutput) -> str:
    """What was wrong with an unreadable reply: the message's ``format_error`` (no tool
    named), else the parse error of its only call (a named tool's bad arguments)."""
    if output.message.format_error is not None:
        assert output.tool_calls == [], output.tool_calls
        return output.message.format_error
    error = only_call(output).parse_error
    assert error is not None, output.tool_calls
    return error
