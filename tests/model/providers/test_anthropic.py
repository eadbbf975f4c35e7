"""The anthropic provider against a real HTTP server on 127.0.0.1 speaking the wire format."""

from __future__ import annotations

import time
from typing import Any

import pytest

import loopwright as lw

from .wire_server import Reply, WireServer, anthropic_error, anthropic_reply

pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05)
HI: list[lw.ChatMessage] = [lw.SystemMessage(content="Be brief."), lw.UserMessage(content="hi")]
ADD = lw.ToolInfo(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key as sent: ``x-api-key`` (SDK 0.x) or a bearer token (newer SDKs)."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


def model(wire: WireServer, config: lw.GenerateConfig | None = None) -> lw.Model:
    return lw.get_model(
        "anthropic/claude-test", base_url=wire.url, api_key="sk-ant-test", config=FAST.merge(config)
    )


async def test_plain_chat_sends_system_apart_and_maps_the_reply(wire: WireServer) -> None:
    wire.push(anthropic_reply(text("Hello"), text(" there")))
    config = lw.GenerateConfig(temperature=0.3, stop_seqs=["END"], seed=1)
    out = await model(wire, config).generate(HI)
    assert out.text == "Hello there"
    assert out.stop_reason == "stop"
    assert out.model == "anthropic/claude-test"
    assert out.usage == lw.Usage(input_tokens=12, output_tokens=6, total_tokens=18)
    [req] = wire.requests
    assert req.path == "/v1/messages"
    assert sent_key(req.headers) == "sk-ant-test"
    body = req.body
    assert body["model"] == "claude-test"
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [text("hi")]}]
    assert body["max_tokens"] == 4096  # the API requires one: the documented default
    assert body["temperature"] == 0.3
    assert body["stop_sequences"] == ["END"]
    assert "seed" not in body and "tools" not in body


async def test_parallel_tool_use_is_parsed(wire: WireServer) -> None:
    wire.push(
        anthropic_reply(
            text("Adding both."),
            tool_use("toolu_1", "add", {"a": 1, "b": 2}),
            tool_use("toolu_2", "add", {"a": 3, "b": 4}),
            stop_reason="tool_use",
        )
    )
    out = await model(wire, lw.GenerateConfig(tool_choice="any")).generate(HI, tools=[ADD])
    assert out.stop_reason == "tool_calls"
    assert out.text == "Adding both."
    assert [(c.id, c.function, c.arguments, c.parse_error) for c in out.tool_calls] == [
        ("toolu_1", "add", {"a": 1, "b": 2}, None),
        ("toolu_2", "add", {"a": 3, "b": 4}, None),
    ]
    body = wire.bodies[0]
    assert body["tools"] == [
        {"name": "add", "description": "Add two numbers.", "input_schema": ADD.parameters}
    ]
    assert body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        (None, None, None),
        ("auto", None, {"type": "auto"}),
        ("none", None, {"type": "none"}),
        (lw.ToolFunction(name="add"), None, {"type": "tool", "name": "add"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("any", False, {"type": "any", "disable_parallel_tool_use": True}),
    ],
)
async def test_tool_choice_and_parallel_flag(
    wire: WireServer, choice: Any, parallel: bool | None, expected: dict[str, Any] | None
) -> None:
    wire.push(anthropic_reply(text("ok")))
    config = lw.GenerateConfig(tool_choice=choice, parallel_tool_calls=parallel)
    await model(wire, config).generate(HI, tools=[ADD])
    assert wire.bodies[0].get("tool_choice") == expected


async def test_tool_results_are_grouped_in_one_user_turn(wire: WireServer) -> None:
    calls = [
        lw.ToolCall(id="toolu_1", function="add", arguments={"a": 1, "b": 2}),
        lw.ToolCall(id="toolu_2", function="add", arguments={"a": "x"}),
    ]
    history: list[lw.ChatMessage] = [
        *HI,
        lw.AssistantMessage(content="", tool_calls=calls, reasoning="hidden thoughts"),
        lw.ToolMessage(content="3", tool_call_id="toolu_1", function="add"),
        lw.ToolMessage(
            tool_call_id="toolu_2",
            function="add",
            error=lw.ToolCallError(type="validation", message="a must be a number"),
        ),
        lw.UserMessage(content="Go on."),
        lw.AssistantMessage(content=""),  # empty: left out
        lw.SystemMessage(content="Be briefer."),  # after the start: sent as user text
    ]
    wire.push(anthropic_reply(text("3")))
    await model(wire).generate(history, tools=[ADD])
    body = wire.bodies[0]
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": [text("hi")]},
        {
            "role": "assistant",
            "content": [
                tool_use("toolu_1", "add", {"a": 1, "b": 2}),
                tool_use("toolu_2", "add", {"a": "x"}),
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Error: a must be a number",
                    "is_error": True,
                },
                text("Go on."),
                text("Be briefer."),
            ],
        },
    ]
    assert "hidden thoughts" not in str(body)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "max_tokens"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "unknown"),
        ("model_context_window_exceeded", "model_length"),
        ("brand_new_reason", "unknown"),
    ],
)
async def test_stop_reasons_map(wire: WireServer, reason: str, expected: str) -> None:
    wire.push(anthropic_reply(text("x"), stop_reason=reason))
    out = await model(wire).generate(HI)
    assert out.stop_reason == expected


async def test_thinking_becomes_reasoning_and_cache_usage_counts(wire: WireServer) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 20,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
    }
    wire.push(
        anthropic_reply(
            {"type": "thinking", "thinking": "2+2 is 4.", "signature": "sig"},
            text("4"),
            usage=usage,
        )
    )
    out = await model(wire).generate(HI)
    assert out.text == "4"
    assert out.message.reasoning == "2+2 is 4."
    assert out.usage == lw.Usage(
        input_tokens=1060,
        output_tokens=20,
        total_tokens=1080,
        cache_read_tokens=1000,
        cache_write_tokens=50,
    )


async def test_non_object_tool_input_is_a_parse_error(wire: WireServer) -> None:
    wire.push(anthropic_reply(tool_use("toolu_1", "add", "1, 2"), stop_reason="tool_use"))
    out = await model(wire).generate(HI, tools=[ADD])
    [call] = out.tool_calls
    assert call.parse_error is not None and "must be a JSON object" in call.parse_error
    assert call.arguments == {}


async def test_overloaded_waits_for_retry_after_then_succeeds(wire: WireServer) -> None:
    wire.push(
        Reply(anthropic_error("overloaded_error", "Overloaded"), 529, {"retry-after": "1"}),
        anthropic_reply(text("ok")),
    )
    out = await model(wire, lw.GenerateConfig(retry_wait=30, max_retry_wait=60)).generate(HI)
    assert out.text == "ok"
    first, second = wire.requests
    assert 0.9 <= second.time - first.time < 10


async def test_rate_limit_then_server_error_then_success(wire: WireServer) -> None:
    wire.push(
        Reply(anthropic_error("rate_limit_error", "Slow down"), 429),
        Reply(anthropic_error("api_error", "Internal"), 500),
        anthropic_reply(text("ok")),
    )
    out = await model(wire).generate(HI)
    assert out.text == "ok"
    assert len(wire.requests) == 3


async def test_invalid_request_is_not_retried(wire: WireServer) -> None:
    wire.push(Reply(anthropic_error("invalid_request_error", "messages: bad role"), 400))
    with pytest.raises(lw.ModelAPIError) as info:
        await model(wire).generate(HI)
    assert info.value.status_code == 400
    assert not info.value.retryable
    assert "messages: bad role" in str(info.value)
    assert len(wire.requests) == 1


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000",
    ],
)
async def test_prompt_too_long_is_a_model_length_output(wire: WireServer, message: str) -> None:
    wire.push(Reply(anthropic_error("invalid_request_error", message), 400))
    out = await model(wire).generate(HI)
    assert out.stop_reason == "model_length"
    assert out.error is not None and message in out.error
    assert len(wire.requests) == 1


async def test_connection_dropped_mid_response_is_retried(wire: WireServer) -> None:
    wire.push(Reply(anthropic_reply(text("lost")), drop=True), anthropic_reply(text("again")))
    out = await model(wire).generate(HI)
    assert out.text == "again"
    assert len(wire.requests) == 2


async def test_slow_response_times_out(wire: WireServer) -> None:
    wire.push(Reply(anthropic_reply(text("late")), delay=3))
    start = time.monotonic()
    with pytest.raises(lw.ModelTimeoutError):
        await model(wire, lw.GenerateConfig(timeout=0.5, max_retries=0)).generate(HI)
    assert time.monotonic() - start < 2.5


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(lw.MissingCredentialsError, match=r"\$ANTHROPIC_API_KEY"):
        lw.get_model("anthropic/claude-sonnet-4-5")


async def test_key_and_base_url_from_the_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    wire.push(anthropic_reply(text("hi")))
    out = await lw.get_model("anthropic/claude-test").generate(HI)
    assert out.text == "hi"
    assert sent_key(wire.requests[0].headers) == "sk-ant-env"


async def test_a_malformed_reply_is_a_retryable_error_naming_the_model(wire: WireServer) -> None:
    broken = anthropic_reply("x")
    broken["content"] = [{"type": "text", "text": None}]
    wire.push(broken)
    with pytest.raises(lw.ModelAPIError, match="malformed response") as info:
        await model(wire, config=lw.GenerateConfig(max_retries=0)).generate(HI)
    assert info.value.retryable and "anthropic/" in str(info.value)
