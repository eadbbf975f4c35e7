"""The openai provider against a real HTTP server on 127.0.0.1 speaking the wire format."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

import loopwright as lw
from tests._tools import CallRecorder

from .wire_server import Reply, WireServer, openai_error, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

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
NOW = lw.ToolInfo(name="now", description="The time.")


def model(wire: WireServer, name: str = "openai/test-model", **kwargs: Any) -> lw.Model:
    config = kwargs.pop("config", None)
    return lw.get_model(
        name,
        base_url=wire.url + "/v1",
        api_key=kwargs.pop("api_key", "sk-test"),
        config=FAST.merge(config),
        **kwargs,
    )


async def test_plain_chat_sends_the_request_and_maps_the_reply(wire: WireServer) -> None:
    wire.push(openai_reply("Hello!"))
    config = lw.GenerateConfig(temperature=0.5, max_tokens=50, stop_seqs=["END"], seed=7, top_p=0.9)
    out = await model(wire).generate(HI, config=config)
    assert out.text == "Hello!"
    assert out.stop_reason == "stop"
    assert out.model == "openai/test-model"
    assert out.usage == lw.Usage(input_tokens=10, output_tokens=5, total_tokens=15)
    [req] = wire.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = req.body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert body["temperature"] == 0.5
    assert body["top_p"] == 0.9
    # another base URL than OpenAI's: the classic field name, which every server knows
    assert body["max_tokens"] == 50
    assert "max_completion_tokens" not in body
    assert body["stop"] == ["END"]
    assert body["seed"] == 7
    assert "tools" not in body and "response_format" not in body


async def test_extra_body_fields_are_merged_into_the_request_body(wire: WireServer) -> None:
    wire.push(openai_reply("ok"))
    config = lw.GenerateConfig(extra_body={"top_k": 20, "repetition_penalty": 1.1}, timeout=30)
    await model(wire).generate(HI, config=config)
    [req] = wire.requests
    assert req.body["top_k"] == 20 and req.body["repetition_penalty"] == 1.1
    assert "extra_body" not in req.body and "timeout" not in req.body


async def test_response_schema_becomes_a_json_schema_response_format(wire: WireServer) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    wire.push(openai_reply('{"x": 1}'))
    out = await model(wire).generate(HI, config=lw.GenerateConfig(response_schema=schema))
    assert json.loads(out.text) == {"x": 1}
    assert wire.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema},
    }


async def test_llamacpp_server_gets_the_schema_as_a_json_object(wire: WireServer) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    wire.push(openai_reply('{"x": 1}'))
    config = lw.GenerateConfig(response_schema=schema)
    await model(wire, "llamacpp-server/smol").generate(HI, config=config)
    assert wire.bodies[0]["response_format"] == {"type": "json_object", "schema": schema}


async def test_parallel_tool_calls_are_parsed_and_tools_sent(wire: WireServer) -> None:
    wire.push(
        openai_reply(
            None,
            tool_calls=[
                ("call_1", "add", '{"a": 1, "b": 2}'),
                ("call_2", "add", '{"a": 3, "b": 4}'),
            ],
            finish_reason="tool_calls",
        )
    )
    config = lw.GenerateConfig(tool_choice="any", parallel_tool_calls=True)
    out = await model(wire).generate(HI, tools=[ADD], config=config)
    assert out.stop_reason == "tool_calls"
    assert out.text == ""
    assert [(c.id, c.function, c.arguments, c.parse_error) for c in out.tool_calls] == [
        ("call_1", "add", {"a": 1, "b": 2}, None),
        ("call_2", "add", {"a": 3, "b": 4}, None),
    ]
    body = wire.bodies[0]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": ADD.parameters,
            },
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is True


async def test_named_tool_choice_is_sent_as_a_function(wire: WireServer) -> None:
    wire.push(openai_reply("ok"))
    config = lw.GenerateConfig(tool_choice=lw.ToolFunction(name="add"))
    await model(wire).generate(HI, tools=[ADD, NOW], config=config)
    assert wire.bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "add"}}


def _tool_round_trip() -> list[lw.ChatMessage]:
    call = lw.ToolCall(id="call_1", function="add", arguments={"a": 1, "b": 2})
    bad = lw.ToolCall(id="call_2", function="add", arguments={"a": "x"})
    return [
        *HI,
        lw.AssistantMessage(content="", tool_calls=[call, bad], reasoning="I should add."),
        lw.ToolMessage(content="3", tool_call_id="call_1", function="add"),
        lw.ToolMessage(
            tool_call_id="call_2",
            function="add",
            error=lw.ToolCallError(type="validation", message="a must be a number"),
        ),
    ]


async def test_tool_results_go_back_with_null_content(wire: WireServer) -> None:
    wire.push(openai_reply("The sum is 3."))
    out = await model(wire).generate(_tool_round_trip(), tools=[ADD])
    assert out.text == "The sum is 3."
    sent = wire.bodies[0]["messages"]
    assistant = sent[2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] is None  # what OpenAI documents for tool-call-only turns
    assert "reasoning" not in json.dumps(assistant)  # reasoning is not sent back
    assert [tc["function"] for tc in assistant["tool_calls"]] == [
        {"name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"name": "add", "arguments": '{"a": "x"}'},
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert sent[4] == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Error: a must be a number",
    }


async def test_llamacpp_server_shortcut_sends_empty_string_content(wire: WireServer) -> None:
    wire.push(openai_reply("3"))
    await model(wire, "llamacpp-server/smol").generate(_tool_round_trip(), tools=[ADD])
    assert wire.bodies[0]["messages"][2]["content"] == ""


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("stop", "stop"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_calls"),
        ("content_filter", "content_filter"),
        ("function_call", "tool_calls"),
        ("something_new", "unknown"),
        (None, "unknown"),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(
    wire: WireServer, finish: str | None, expected: str
) -> None:
    wire.push(openai_reply("x", finish_reason=finish))
    out = await model(wire).generate(HI)
    assert out.stop_reason == expected


async def test_legacy_function_call_becomes_a_tool_call(wire: WireServer) -> None:
    wire.push(
        openai_reply(
            None,
            finish_reason="function_call",
            function_call={"name": "add", "arguments": '{"a": 2, "b": 2}'},
        )
    )
    out = await model(wire).generate(HI, tools=[ADD])
    assert [(c.function, c.arguments) for c in out.tool_calls] == [("add", {"a": 2, "b": 2})]


async def test_refusal_is_content_filter_with_its_text(wire: WireServer) -> None:
    wire.push(openai_reply(None, refusal="I can't help with that."))
    out = await model(wire).generate(HI)
    assert out.stop_reason == "content_filter"
    assert out.text == "I can't help with that."


async def test_usage_details_and_reasoning_content(wire: WireServer) -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 40,
        "total_tokens": 140,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    wire.push(openai_reply("42", usage=usage, reasoning_content="Let me think."))
    out = await model(wire).generate(HI)
    assert out.usage == lw.Usage(
        input_tokens=100,
        output_tokens=40,
        total_tokens=140,
        cache_read_tokens=64,
        reasoning_tokens=30,
    )
    assert out.message.reasoning == "Let me think."


@pytest.mark.parametrize(
    ("raw", "expected_args", "error_part"),
    [
        ('{"a": 1, "b":', {}, "not valid JSON"),
        ("[1, 2]", {}, "must be a JSON object"),
        ("", {}, "were empty"),
        ("   ", {}, "were empty"),
    ],
)
async def test_bad_tool_arguments_become_parse_errors(
    wire: WireServer, raw: str, expected_args: dict[str, Any], error_part: str
) -> None:
    wire.push(openai_reply(None, tool_calls=[("c1", "add", raw)], finish_reason="tool_calls"))
    out = await model(wire).generate(HI, tools=[ADD])
    [call] = out.tool_calls
    assert call.function == "add"
    assert call.arguments == expected_args
    assert call.parse_error is not None and error_part in call.parse_error
    assert "add" in call.parse_error


async def test_empty_arguments_for_a_tool_without_parameters_are_fine(wire: WireServer) -> None:
    wire.push(openai_reply(None, tool_calls=[("c1", "now", "")], finish_reason="tool_calls"))
    out = await model(wire).generate(HI, tools=[NOW])
    [call] = out.tool_calls
    assert (call.arguments, call.parse_error) == ({}, None)


async def test_rate_limit_waits_for_retry_after_then_succeeds(wire: WireServer) -> None:
    wire.push(
        Reply(
            openai_error("Rate limit reached", kind="rate_limit_error"), 429, {"retry-after": "1"}
        ),
        openai_reply("done"),
    )
    recorder = CallRecorder()
    # a long backoff: only honouring Retry-After (1 s) makes this finish quickly
    m = model(wire, config=lw.GenerateConfig(retry_wait=30, max_retry_wait=60))
    with lw.model_hook(recorder):
        out = await m.generate(HI)
    assert out.text == "done"
    first, second = wire.requests
    assert 0.9 <= second.time - first.time < 10
    assert recorder.calls[0].retries == 1
    assert recorder.calls[0].wait_time >= 1.0


async def test_retry_after_ms_is_preferred(wire: WireServer) -> None:
    wire.push(
        Reply(openai_error("slow down"), 429, {"retry-after-ms": "200", "retry-after": "20"}),
        openai_reply("done"),
    )
    config = lw.GenerateConfig(retry_wait=30, max_retry_wait=60)  # (0.2 s within the cap)
    out = await model(wire, config=config).generate(HI)
    assert out.text == "done"
    first, second = wire.requests
    assert 0.15 <= second.time - first.time < 5


async def test_server_error_is_retried(wire: WireServer) -> None:
    wire.push(
        Reply(openai_error("boom", kind="server_error"), 500),
        Reply(openai_error("busy", kind="server_error"), 503),
        openai_reply("ok"),
    )
    out = await model(wire).generate(HI)
    assert out.text == "ok"
    assert len(wire.requests) == 3


async def test_server_errors_give_up_after_max_retries(wire: WireServer) -> None:
    wire.push(*[Reply(openai_error("boom", kind="server_error"), 500) for _ in range(3)])
    m = model(wire, config=lw.GenerateConfig(max_retries=2))
    with pytest.raises(lw.ModelAPIError) as info:
        await m.generate(HI)
    assert info.value.status_code == 500
    assert info.value.retryable
    assert len(wire.requests) == 3


async def test_bad_request_is_not_retried(wire: WireServer) -> None:
    wire.push(Reply(openai_error("Invalid value for 'temperature'"), 400), openai_reply("never"))
    with pytest.raises(lw.ModelAPIError) as info:
        await model(wire).generate(HI)
    err = info.value
    assert err.status_code == 400
    assert not err.retryable
    assert "Invalid value for 'temperature'" in str(err)
    assert "openai/test-model" in str(err)
    assert len(wire.requests) == 1


async def test_authentication_error_names_the_key_variable(wire: WireServer) -> None:
    wire.push(Reply(openai_error("Incorrect API key provided"), 401))
    with pytest.raises(lw.ModelAPIError, match="OPENAI_API_KEY"):
        await model(wire).generate(HI)
    assert len(wire.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        openai_error(
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens.",
            "context_length_exceeded",
        ),
        openai_error("Requested tokens (3000) exceed context window of 2048"),
        {"error": {"message": "something", "code": "context_length_exceeded"}},
    ],
)
async def test_context_length_error_is_a_model_length_output(
    wire: WireServer, body: dict[str, Any]
) -> None:
    wire.push(Reply(body, 400))
    out = await model(wire).generate(HI)
    assert out.stop_reason == "model_length"
    assert out.text == "" and not out.tool_calls
    assert out.error is not None and "context window" in out.error
    assert len(wire.requests) == 1


async def test_connection_dropped_mid_response_is_retried(wire: WireServer) -> None:
    wire.push(Reply(openai_reply("lost"), drop=True), openai_reply("second try"))
    out = await model(wire).generate(HI)
    assert out.text == "second try"
    assert len(wire.requests) == 2


async def test_connection_dropped_without_retries_is_a_retryable_error(wire: WireServer) -> None:
    wire.push(Reply(openai_reply("lost"), drop=True))
    with pytest.raises(lw.ModelAPIError) as info:
        await model(wire, config=lw.GenerateConfig(max_retries=0)).generate(HI)
    assert info.value.retryable
    assert "connection" in str(info.value)


async def test_unreachable_server_is_a_retryable_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = lw.get_model(
        "openai/x",
        base_url=f"http://127.0.0.1:{port}/v1",
        config=lw.GenerateConfig(max_retries=0),
    )
    with pytest.raises(lw.ModelAPIError) as info:
        await m.generate(HI)
    assert info.value.retryable
    assert f"127.0.0.1:{port}" in str(info.value)


async def test_slow_response_times_out(wire: WireServer) -> None:
    wire.push(Reply(openai_reply("too late"), delay=3))
    m = model(wire, config=lw.GenerateConfig(timeout=0.5, max_retries=0))
    start = time.monotonic()
    with pytest.raises(lw.ModelTimeoutError):
        await m.generate(HI)
    assert time.monotonic() - start < 2.5


async def test_slow_response_then_fast_retry_succeeds(wire: WireServer) -> None:
    wire.push(Reply(openai_reply("too late"), delay=3), openai_reply("in time"))
    m = model(wire, config=lw.GenerateConfig(timeout=0.5, max_retries=1))
    out = await m.generate(HI)
    assert out.text == "in time"


async def test_no_choices_is_a_retryable_error(wire: WireServer) -> None:
    wire.push({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []})
    with pytest.raises(lw.ModelAPIError, match="no choices") as info:
        await model(wire, config=lw.GenerateConfig(max_retries=0)).generate(HI)
    assert info.value.retryable


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(lw.MissingCredentialsError, match=r"\$OPENAI_API_KEY"):
        lw.get_model("openai/gpt-4o-mini")


@pytest.mark.parametrize(
    ("provider", "var"),
    [
        ("groq", "GROQ_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("together", "TOGETHER_API_KEY"),
    ],
)
def test_hosted_shortcuts_need_their_key(
    monkeypatch: pytest.MonkeyPatch, provider: str, var: str
) -> None:
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(lw.MissingCredentialsError, match=var):
        lw.get_model(f"{provider}/some-model")


@pytest.mark.parametrize(
    ("provider", "url_var", "default"),
    [
        ("ollama", "OLLAMA_BASE_URL", "http://localhost:11434/v1"),
        ("vllm", "VLLM_BASE_URL", "http://localhost:8000/v1"),
        ("llamacpp-server", "LLAMACPP_BASE_URL", "http://localhost:8000/v1"),
    ],
)
def test_local_servers_need_no_key_and_read_their_base_url(
    monkeypatch: pytest.MonkeyPatch, provider: str, url_var: str, default: str
) -> None:
    monkeypatch.delenv(url_var, raising=False)
    assert lw.get_model(f"{provider}/m").api.base_url == default  # type: ignore[attr-defined]
    monkeypatch.setenv(url_var, "http://127.0.0.1:9/v1/")
    m = lw.get_model(f"{provider}/m")
    assert m.api.base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    assert m.name == f"{provider}/m"


async def test_shortcut_sends_its_key_from_the_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-env")
    monkeypatch.setenv("GROQ_BASE_URL", wire.url + "/openai/v1")
    wire.push(openai_reply("fast"))
    out = await lw.get_model("groq/llama-3.1-8b").generate(HI)
    assert out.text == "fast"
    [req] = wire.requests
    assert req.path == "/openai/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer gsk-env"
    assert req.body["model"] == "llama-3.1-8b"


def test_openai_itself_uses_max_completion_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from loopwright.model.providers.openai import OpenAIAPI

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    api = OpenAIAPI("gpt-4o-mini", api_key="sk-x")
    assert api._max_tokens_param == "max_completion_tokens"


def test_model_name_is_required() -> None:
    with pytest.raises(lw.ConfigurationError, match="name the model"):
        lw.get_model("openai", api_key="sk-x")


async def test_model_is_usable_from_two_event_loops(wire: WireServer) -> None:
    """``run_sync`` makes a new loop per run: the SDK client must follow the loop."""
    import asyncio
    import threading

    m = model(wire)
    wire.push(openai_reply("one"), openai_reply("two"))
    results: list[str] = []

    def other_loop() -> None:
        results.append(asyncio.run(m.generate(HI)).text)

    results.append((await m.generate(HI)).text)
    t = threading.Thread(target=other_loop)
    t.start()
    t.join(30)
    assert results == ["one", "two"]
    await m.aclose()


async def test_a_malformed_reply_is_a_retryable_error_naming_the_model(wire: WireServer) -> None:
    broken = openai_reply("x")
    broken["choices"][0]["message"] = None
    wire.push(broken)
    wire.push(openai_reply("fine"))
    out = await model(wire, config=lw.GenerateConfig(max_retries=1, retry_wait=0.01)).generate(HI)
    assert out.text == "fine"  # retried
    wire.push(broken)
    with pytest.raises(lw.ModelAPIError, match="openai/test-model: malformed response") as info:
        await model(wire, config=lw.GenerateConfig(max_retries=0)).generate(HI)
    assert info.value.retryable


def test_a_misspelt_client_argument_is_refused_when_the_model_is_made() -> None:
    with pytest.raises(
        lw.ConfigurationError, match=r"takes no argument 'timeuot'; it takes: .*timeout"
    ):
        lw.get_model("openai/m", api_key="k", timeuot=5)
    assert lw.get_model("openai/m", api_key="k", timeout=5).name == "openai/m"
