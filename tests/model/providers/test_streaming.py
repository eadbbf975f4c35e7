"""Streamed replies from the openai and anthropic providers, against a real SSE server on
127.0.0.1 sending the chunks the APIs send (split where they split them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import loopwright as lw
from loopwright.model._stream import stream_to

from .sse_server import (
    OPENAI_DONE,
    SSEServer,
    Stream,
    anthropic_end,
    anthropic_start,
    anthropic_text_block,
    anthropic_thinking_block,
    anthropic_tool_block,
    openai_delta,
    openai_text_stream,
    openai_tool_delta,
    openai_usage,
)

pytest.importorskip("openai")
pytest.importorskip("anthropic")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05)
HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
ADD = lw.ToolInfo(
    name="add",
    description="Add two numbers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
ECHO = lw.ToolInfo(
    name="echo",
    description="Echo a text.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


@pytest.fixture
def sse() -> Iterator[SSEServer]:
    with SSEServer() as server:
        yield server


def openai_model(sse: SSEServer, **config: Any) -> lw.Model:
    return lw.get_model(
        "openai/test-model",
        base_url=sse.url + "/v1",
        api_key="sk-test",
        config=FAST.merge(lw.GenerateConfig(**config)),
    )


def anthropic_model(sse: SSEServer) -> lw.Model:
    return lw.get_model("anthropic/claude-test", base_url=sse.url, api_key="sk-ant", config=FAST)


async def streamed(
    model: lw.Model, tools: list[lw.ToolInfo] | None = None
) -> tuple[list[Any], lw.ModelOutput]:
    seen: list[Any] = []
    with stream_to(seen.append):
        output = await model.generate(HI, tools or [])
    return seen, output


async def test_openai_text_streams_piece_by_piece_with_usage_from_the_last_chunk(
    sse: SSEServer,
) -> None:
    sse.push(Stream(openai_text_stream(["Hel", "lo, ", "wor", "ld"])))
    seen, output = await streamed(openai_model(sse))
    assert [d.text for d in seen] == ["Hel", "lo, ", "wor", "ld"]
    assert all(isinstance(d, lw.TextDelta) for d in seen)
    assert output.text == "Hello, world"
    assert output.stop_reason == "stop"
    assert output.usage is not None and output.usage.total_tokens == 15
    body = sse.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_openai_parallel_tool_calls_with_interleaved_argument_deltas(sse: SSEServer) -> None:
    sse.push(
        Stream(
            [
                openai_delta(role="assistant", content=None),
                openai_tool_delta(0, id="call_a", name="add", arguments=""),
                openai_tool_delta(1, id="call_b", name="echo", arguments='{"te'),
                openai_tool_delta(0, arguments='{"a": 4'),
                openai_tool_delta(1, arguments='xt": "sp'),  # split inside a string
                openai_tool_delta(0, arguments='65, "b": 1}'),
                openai_tool_delta(1, arguments='lit \\u00e9"}'),  # and inside an escape
                openai_delta(finish="tool_calls"),
                openai_usage(20, 9),
                OPENAI_DONE,
            ]
        )
    )
    seen, output = await streamed(openai_model(sse), [ADD, ECHO])
    assert seen == []  # no text: tool-call arguments are not text deltas
    calls = output.tool_calls
    assert [(c.id, c.function, c.arguments) for c in calls] == [
        ("call_a", "add", {"a": 465, "b": 1}),
        ("call_b", "echo", {"text": "split é"}),
    ]
    assert all(c.parse_error is None for c in calls)
    assert output.stop_reason == "tool_calls"
    assert output.usage is not None and output.usage.input_tokens == 20


async def test_openai_reasoning_deltas(sse: SSEServer) -> None:
    sse.push(
        Stream(
            [
                openai_delta(role="assistant", reasoning_content="Let me "),
                openai_delta(reasoning_content="think."),
                openai_delta(content="42"),
                openai_delta(finish="stop"),
                OPENAI_DONE,
            ]
        )
    )
    seen, output = await streamed(openai_model(sse))
    assert [type(d).__name__ for d in seen] == ["ReasoningDelta", "ReasoningDelta", "TextDelta"]
    assert output.message.reasoning == "Let me think." and output.text == "42"


async def test_openai_cut_before_any_text_is_retried(sse: SSEServer) -> None:
    # the connection drops while only a tool call's arguments had come: nothing reached
    # the consumer, so the call is retried, and the half call is never returned
    sse.push(
        Stream(
            [
                openai_delta(role="assistant", content=None),
                openai_tool_delta(0, id="call_a", name="add", arguments='{"a": 1, "b'),
                openai_delta(finish="tool_calls"),
            ],
            cut_after=2,
        ),
        Stream(openai_text_stream(["fine"])),
    )
    seen, output = await streamed(openai_model(sse), [ADD])
    assert output.text == "fine" and output.tool_calls == []
    assert [d.text for d in seen] == ["fine"]
    assert len(sse.bodies) == 2


async def test_openai_stream_without_finish_is_retried(sse: SSEServer) -> None:
    # the body ends cleanly but the reply never said it finished: incomplete
    sse.push(
        Stream([openai_delta(role="assistant", content=None), OPENAI_DONE]),
        Stream(openai_text_stream(["ok"])),
    )
    _, output = await streamed(openai_model(sse))
    assert output.text == "ok" and len(sse.bodies) == 2


async def test_openai_cut_after_text_is_a_clear_error_not_a_retry(sse: SSEServer) -> None:
    sse.push(Stream(openai_text_stream(["Hello", " there", "!"]), cut_after=3))
    sse.push(Stream(openai_text_stream(["should not be asked for"])))
    seen: list[Any] = []
    with stream_to(seen.append), pytest.raises(lw.StreamCutError, match="after part of the reply"):
        await openai_model(sse).generate(HI)
    assert [d.text for d in seen] == ["Hello", " there"]
    assert len(sse.bodies) == 1


async def test_openai_without_a_sink_does_not_stream(sse: SSEServer) -> None:
    from .wire_server import WireServer, openai_reply

    with WireServer() as wire:
        wire.push(openai_reply("plain"))
        model = lw.get_model("openai/m", base_url=wire.url + "/v1", api_key="k", config=FAST)
        output = await model.generate(HI)
    assert output.text == "plain" and "stream" not in wire.bodies[0]


async def test_anthropic_text_thinking_and_tool_use_stream(sse: SSEServer) -> None:
    sse.push(
        Stream(
            [
                anthropic_start(),
                *anthropic_thinking_block(0, ["Hmm, ", "add."]),
                *anthropic_text_block(1, ["Adding ", "now."]),
                *anthropic_tool_block(2, "toolu_1", "add", ['{"a": 2', ', "b": 3', "}"]),
                *anthropic_end("tool_use", 11),
            ]
        )
    )
    seen, output = await streamed(anthropic_model(sse), [ADD])
    assert [(type(d).__name__, d.text) for d in seen] == [
        ("ReasoningDelta", "Hmm, "),
        ("ReasoningDelta", "add."),
        ("TextDelta", "Adding "),
        ("TextDelta", "now."),
    ]
    assert output.text == "Adding now."
    assert output.message.reasoning == "Hmm, add."
    [call] = output.tool_calls
    assert (call.id, call.function, call.arguments) == ("toolu_1", "add", {"a": 2, "b": 3})
    assert output.stop_reason == "tool_calls"
    assert output.usage is not None and output.usage.output_tokens == 11
    assert sse.bodies[0]["stream"] is True


async def test_anthropic_cut_mid_tool_call_is_retried_never_executed(sse: SSEServer) -> None:
    events = [
        anthropic_start(),
        *anthropic_tool_block(0, "toolu_1", "add", ['{"a": 2', ', "b": 3', "}"]),
        *anthropic_end("tool_use"),
    ]
    sse.push(Stream(events, cut_after=3))
    sse.push(Stream([anthropic_start(), *anthropic_text_block(0, ["done"]), *anthropic_end()]))
    _, output = await streamed(anthropic_model(sse), [ADD])
    assert output.tool_calls == [] and output.text == "done"
    assert len(sse.bodies) == 2


async def test_anthropic_cut_after_text_is_a_clear_error(sse: SSEServer) -> None:
    events = [anthropic_start(), *anthropic_text_block(0, ["one ", "two ", "three"])]
    sse.push(Stream([*events, *anthropic_end()], cut_after=4))
    with stream_to(lambda d: None), pytest.raises(lw.StreamCutError):
        await anthropic_model(sse).generate(HI)
    assert len(sse.bodies) == 1


async def test_react_protocol_streams_the_thought_only(sse: SSEServer) -> None:
    model = lw.get_model(
        "openai/m", base_url=sse.url + "/v1", api_key="k", config=FAST, tool_protocol="react"
    )
    reply = ["Thought: I should", " add them.\nAct", 'ion: add\nAction Input: {"a": 1, "b": 2}']
    sse.push(Stream(openai_text_stream(reply)))
    seen, output = await streamed(model, [ADD])
    assert all(isinstance(d, lw.ReasoningDelta) for d in seen)
    shown = "".join(d.text for d in seen)
    assert shown == "Thought: I should add them.\n"
    assert "Action" not in shown
    [call] = output.tool_calls
    assert call.arguments == {"a": 1, "b": 2}


async def test_json_protocol_streams_the_parsed_thought_once(sse: SSEServer) -> None:
    model = lw.get_model(
        "openai/m", base_url=sse.url + "/v1", api_key="k", config=FAST, tool_protocol="json"
    )
    reply = [
        '{"thought": "Add',
        ' them.", "action": {"name": "add", ',
        '"arguments": {"a": 1, "b": 2}}}',
    ]
    sse.push(Stream(openai_text_stream(reply)))
    seen, output = await streamed(model, [ADD])
    assert seen == [lw.ReasoningDelta("Add them.")]
    assert output.message.reasoning == "Add them."
    assert output.tool_calls[0].arguments == {"a": 1, "b": 2}


async def test_default_generate_stream_wraps_generate() -> None:
    model = lw.get_model("mock", outputs=["all at once"])
    seen: list[Any] = []
    with stream_to(seen.append):
        output = await model.generate(HI)
    assert seen == [lw.TextDelta("all at once")] and output.text == "all at once"


def test_no_task_or_thread_left_after_a_cut(sse: SSEServer) -> None:
    import threading

    sse.push(Stream(openai_text_stream(["a", "b", "c"]), cut_after=3))
    before = threading.active_count()

    async def main() -> None:
        model = openai_model(sse)
        with stream_to(lambda d: None), pytest.raises(lw.StreamCutError):
            await model.generate(HI)
        await model.aclose()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())
    assert threading.active_count() <= before + 1  # the server's own handler thread at most


async def test_a_lone_surrogate_in_the_request_is_sent_replaced(sse: SSEServer) -> None:
    sse.push(Stream(openai_text_stream(["ok"])))
    sse.push(Stream([anthropic_start(), *anthropic_text_block(0, ["ok"]), *anthropic_end()]))
    bad = [lw.UserMessage(content="bad \ud800 text")]
    with stream_to(lambda d: None):
        first = await openai_model(sse).generate(bad)
        second = await anthropic_model(sse).generate(bad)
    assert first.text == second.text == "ok"
    assert sse.bodies[0]["messages"][0]["content"] == "bad \ufffd text"
    assert sse.bodies[1]["messages"][0]["content"][0]["text"] == "bad \ufffd text"
