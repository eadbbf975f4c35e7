"""``strict_tools=True``: the openai provider sends tools in strict mode; the request body
as a real server on 127.0.0.1 received it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import loopwright as lw

from .wire_server import WireServer, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
SEARCH = lw.ToolInfo(
    name="search",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for.", "minLength": 1},
            "limit": {"type": "integer", "default": 10, "title": "Limit"},
        },
        "required": ["query"],
    },
)
LOOSE = lw.ToolInfo(
    name="tag",
    description="Tag things.",
    parameters={
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["labels"],
    },
)


def model(wire: WireServer, **kwargs: Any) -> lw.Model:
    return lw.get_model(
        "openai/gpt-test",
        base_url=wire.url + "/v1",
        api_key="sk-test",
        config=lw.GenerateConfig(max_retries=0),
        **kwargs,
    )


async def test_strict_tools_are_sent_strict(wire: WireServer) -> None:
    wire.push(openai_reply("ok"))
    await model(wire, strict_tools=True).generate(HI, tools=[SEARCH])
    [tool] = wire.bodies[0]["tools"]
    assert tool == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "limit": {"type": ["integer", "null"]},
                },
                "required": ["query", "limit"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    assert tool["function"]["parameters"] == lw.strict_schema(SEARCH.parameters)
    assert "required" in SEARCH.parameters and SEARCH.parameters["required"] == ["query"]


async def test_a_tool_without_a_strict_form_is_sent_as_it_is_with_one_warning(
    wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    wire.push(openai_reply("ok"), openai_reply("ok"))
    m = model(wire, strict_tools=True)
    with caplog.at_level(logging.WARNING, logger="loopwright.model"):
        for _ in range(2):
            await m.generate(HI, tools=[SEARCH, LOOSE])
    for body in wire.bodies:
        strict, loose = body["tools"]
        assert strict["function"]["strict"] is True
        assert "strict" not in loose["function"]
        assert loose["function"]["parameters"] == LOOSE.parameters
    [warning] = [r.getMessage() for r in caplog.records if r.name == "loopwright.model"]
    assert "'tag' is sent without strict mode" in warning and "labels" in warning


async def test_tools_are_not_strict_by_default(wire: WireServer) -> None:
    wire.push(openai_reply("ok"))
    await model(wire).generate(HI, tools=[SEARCH])
    [tool] = wire.bodies[0]["tools"]
    assert "strict" not in tool["function"]
    assert tool["function"]["parameters"] == SEARCH.parameters


def test_strict_tools_must_be_a_bool() -> None:
    with pytest.raises(lw.ConfigurationError, match="strict_tools must be True or False"):
        lw.get_model("openai/m", base_url="http://127.0.0.1:9/v1", strict_tools="yes")
