"""Hostile provider bodies against the HTTP providers, through a real server on 127.0.0.1:
each is a retryable model error or a tool-call parse error, never a raw exception."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import loopwright as lw

from .wire_server import Reply, WireServer, anthropic_reply, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05)
HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
ADD = lw.ToolInfo(
    name="add",
    description="Add two numbers.",
    parameters={"type": "object", "properties": {"a": {"type": "number"}}},
)
DEEP = 100_000


def openai_model(wire: WireServer, retries: int = 0) -> lw.Model:
    return lw.get_model(
        "openai/test-model",
        base_url=wire.url + "/v1",
        api_key="sk-test",
        config=FAST.merge(lw.GenerateConfig(max_retries=retries)),
    )


def _bad_utf8() -> bytes:
    good = json.dumps(openai_reply("hello")).encode()
    return good.replace(b"hello", b"he\xff\xfello")


BODIES = {
    "not JSON": b'{"id": "x", "choices": [',
    "not UTF-8": _bad_utf8(),
    "nested too deeply": b"[" * DEEP + b"]" * DEEP,
    "nested too deeply in an object": b'{"choices": ' + b"[" * DEEP + b"]" * DEEP + b"}",
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
async def test_an_unreadable_body_is_a_retryable_error_naming_the_model(
    wire: WireServer, body: bytes
) -> None:
    wire.push(Reply(body))
    start = time.monotonic()
    with pytest.raises(lw.ModelAPIError) as info:
        await openai_model(wire).generate(HI)
    assert time.monotonic() - start < 5
    assert info.value.retryable
    assert "openai/test-model" in str(info.value)
    assert "could not be read" in str(info.value)


async def test_an_unreadable_body_is_retried(wire: WireServer) -> None:
    wire.push(Reply(BODIES["nested too deeply"]), Reply(_bad_utf8()), openai_reply("fine"))
    out = await openai_model(wire, retries=2).generate(HI)
    assert out.text == "fine"
    assert len(wire.requests) == 3


async def test_anthropic_unreadable_body_is_a_retryable_error(wire: WireServer) -> None:
    pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    wire.push(Reply(BODIES["nested too deeply"]), Reply(b"{oops"), anthropic_reply())
    model = lw.get_model(
        "anthropic/claude-test",
        base_url=wire.url,
        api_key="sk-ant-test",
        config=FAST.merge(lw.GenerateConfig(max_retries=0)),
    )
    for _ in range(2):
        with pytest.raises(lw.ModelAPIError) as info:
            await model.generate(HI)
        assert info.value.retryable and "anthropic/claude-test" in str(info.value)
    assert (await model.generate(HI)).stop_reason == "stop"


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * DEEP + "]" * DEEP,
        '{"a": ' + "[" * DEEP + "]" * DEEP + "}",
        # parses, but deeper than any tool takes
        '{"a": ' + '{"b": ' * 150 + "1" + "}" * 151,
    ],
    ids=["array", "in an object", "150 levels"],
)
async def test_deeply_nested_tool_arguments_are_a_parse_error(
    wire: WireServer, arguments: str
) -> None:
    wire.push(openai_reply("", tool_calls=[("call_1", "add", arguments)]))
    start = time.monotonic()
    out = await openai_model(wire).generate(HI, tools=[ADD])
    assert time.monotonic() - start < 5
    [call] = out.tool_calls
    assert call.arguments == {}
    assert call.parse_error is not None and "nested more than 100 levels" in call.parse_error
    # the call goes back to the model as data, and the next request is fine
    wire.push(openai_reply("ok"))
    history = [*HI, out.message, lw.ToolMessage(content="", tool_call_id="call_1", function="add")]
    assert (await openai_model(wire).generate(history, tools=[ADD])).text == "ok"


async def test_moderately_nested_tool_arguments_are_kept(wire: WireServer) -> None:
    arguments = '{"a": ' + "[" * 50 + "1" + "]" * 50 + "}"
    wire.push(openai_reply("", tool_calls=[("call_1", "add", arguments)]))
    [call] = (await openai_model(wire).generate(HI, tools=[ADD])).tool_calls
    assert call.parse_error is None
    assert call.arguments == json.loads(arguments)


async def test_a_lone_surrogate_in_a_reply_is_replaced(wire: WireServer) -> None:
    body = json.dumps(openai_reply("he\ud800llo", reasoning_content="th\udfffink"))
    assert "\\ud800" in body  # escaped in the JSON, as a server would send it
    wire.push(Reply(body))
    out = await openai_model(wire).generate(HI)
    assert out.text == "he\ufffdllo"
    assert out.message.reasoning == "th\ufffdink"
    out.text.encode("utf-8")


async def test_a_lone_surrogate_in_the_history_is_sent_replaced(wire: WireServer) -> None:
    wire.push(openai_reply("ok"))
    history: list[lw.ChatMessage] = [
        lw.UserMessage(content="run it"),
        lw.AssistantMessage(content="a\ud800b"),
        lw.UserMessage(content="c\udc00d"),
    ]
    out = await openai_model(wire).generate(history)
    assert out.text == "ok"
    [req] = wire.requests
    assert [m["content"] for m in req.body["messages"]] == ["run it", "a\ufffdb", "c\ufffdd"]


def test_a_run_goes_on_after_a_deeply_nested_tool_call(wire: WireServer, tmp_path: Path) -> None:
    deep = '{"answer": ' + "[" * DEEP + "]" * DEEP + "}"
    wire.push(
        openai_reply("", tool_calls=[("call_1", "submit", deep)]),
        openai_reply("", tool_calls=[("call_2", "submit", '{"answer": "6"}')]),
    )
    state = lw.run_sync(
        lw.react(max_steps=4), "What is 2 times 3?", model=openai_model(wire), db=tmp_path / "r.db"
    )
    assert state.completed == "submit" and state.output.text == "6"
    # the model was told, as a tool result, and the run went on
    told = [m for m in wire.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(told) == 1 and "nested more than 100 levels" in told[0]["content"]
