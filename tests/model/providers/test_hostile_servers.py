"""Hostile or broken servers against the HTTP providers, through real servers on
127.0.0.1: each ends in an output or a clear error, and never hands a secret to
another host."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import threading
from typing import Any
from urllib.parse import quote

import pytest

import loopwright as lw
from loopwright.model._stream import StreamCutError, stream_to

from .sse_server import (
    OPENAI_DONE,
    SSEServer,
    Stream,
    anthropic_end,
    anthropic_event,
    anthropic_start,
    anthropic_text_block,
    anthropic_tool_block,
    openai_delta,
    openai_text_stream,
    openai_tool_delta,
)
from .wire_server import Reply, WireServer, anthropic_reply, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")
pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
ONCE = lw.GenerateConfig(max_retries=0, timeout=30)
HEADER_SECRET = "header-secret-4f9a2c"


def _openai(url: str) -> lw.Model:
    return lw.get_model(
        "openai/test-model",
        base_url=url + "/v1",
        api_key="sk-openai-secret-1234",
        default_headers={"api-key": HEADER_SECRET},
        config=ONCE,
    )


def _anthropic(url: str) -> lw.Model:
    return lw.get_model(
        "anthropic/claude-test",
        base_url=url,
        api_key="sk-ant-secret-1234",
        default_headers={"x-custom-auth": HEADER_SECRET},
        config=ONCE,
    )


@pytest.mark.parametrize(
    ("make", "path", "reply"),
    [
        (_openai, "/v1/chat/completions", openai_reply("from elsewhere")),
        (_anthropic, "/v1/messages", anthropic_reply({"type": "text", "text": "elsewhere"})),
    ],
    ids=["openai", "anthropic"],
)
@pytest.mark.parametrize("status", [302, 307, 308])
async def test_a_redirect_to_another_host_is_not_followed(
    make: Any, path: str, reply: dict[str, Any], status: int
) -> None:
    with WireServer() as server, WireServer() as elsewhere:
        elsewhere.push(reply)
        server.push(Reply({}, status=status, headers={"location": elsewhere.url + path}))
        with pytest.raises(lw.ModelAPIError) as info:
            await make(server.url).generate(HI)
        # the other host got nothing: not the headers, not the conversation
        assert elsewhere.requests == []
        assert len(server.requests) == 1
        message = str(info.value)
        assert f"HTTP {status}" in message and "redirects to " + elsewhere.url in message
        assert not info.value.retryable
        assert HEADER_SECRET not in message


# --- streams of the wrong shape ----------------------------------------------------------

BAD_CHUNKS = {
    "a tool call id that is a number": [
        openai_delta(tool_calls=[{"index": 0, "id": 123, "function": {"name": "f"}}]),
        openai_delta(finish="tool_calls"),
    ],
    "arguments that are an object": [
        openai_delta(
            tool_calls=[{"index": 0, "id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]
        ),
        openai_delta(finish="tool_calls"),
    ],
    "choices that are a number": [
        b'data: {"choices": 5}\n\n',
        openai_delta(finish="stop"),
    ],
    "tool calls that are a number": [openai_delta(tool_calls=5), openai_delta(finish="stop")],
    "a finish reason that is a list": [openai_delta(finish=["stop"])],
}


@pytest.mark.parametrize("events", BAD_CHUNKS.values(), ids=BAD_CHUNKS.keys())
async def test_an_openai_chunk_of_the_wrong_shape_is_a_retryable_error(
    events: list[bytes],
) -> None:
    with SSEServer() as sse:
        sse.push(Stream([*events, OPENAI_DONE]), Stream(openai_text_stream(["fine"])))
        model = lw.get_model(
            "openai/test-model",
            base_url=sse.url + "/v1",
            api_key="sk-test",
            config=ONCE.merge(lw.GenerateConfig(max_retries=1, retry_wait=0.01)),
        )
        seen: list[Any] = []
        with stream_to(seen.append):
            out = await model.generate(HI)
        assert out.text == "fine"  # the malformed stream was retried
        assert len(sse.bodies) == 2


BAD_EVENTS = {
    "a delta for a block that never started": [
        anthropic_start(),
        anthropic_event("content_block_delta", index=5, delta={"type": "text_delta", "text": "x"}),
        *anthropic_end(),
    ],
    "a block before the message started": [*anthropic_text_block(0, ["x"]), *anthropic_end()],
}


@pytest.mark.parametrize("events", BAD_EVENTS.values(), ids=BAD_EVENTS.keys())
async def test_an_anthropic_event_out_of_place_is_a_retryable_error(events: list[bytes]) -> None:
    with SSEServer() as sse:
        good = [anthropic_start(), *anthropic_text_block(0, ["fine"]), *anthropic_end()]
        sse.push(Stream(events), Stream(good))
        model = lw.get_model(
            "anthropic/claude-test", base_url=sse.url, api_key="sk-ant-test", config=ONCE
        )
        with pytest.raises(lw.ModelAPIError) as info, stream_to(lambda delta: None):
            await model.generate(HI)
        assert info.value.retryable and "malformed response" in str(info.value)
        with stream_to(lambda delta: None):
            assert (await model.generate(HI)).text == "fine"


# --- usage that is no count --------------------------------------------------------------

NO_COUNTS = {
    "negative": "-1",
    "infinite": "1e400",
    "400 digits": "9" * 400,
    "not whole": "2.5",
    "not a number": '"many"',
}


@pytest.mark.parametrize("count", NO_COUNTS.values(), ids=NO_COUNTS.keys())
async def test_a_token_count_that_is_no_count_makes_the_usage_unknown(count: str) -> None:
    first = openai_reply("kept", usage={"prompt_tokens": 7, "completion_tokens": 3})
    body = json.dumps(openai_reply("kept", usage={"prompt_tokens": 0, "completion_tokens": 3}))
    body = body.replace('"prompt_tokens": 0', f'"prompt_tokens": {count}')
    anthropic_body = json.dumps(anthropic_reply({"type": "text", "text": "kept"}))
    anthropic_body = anthropic_body.replace('"input_tokens": 12', f'"input_tokens": {count}')
    with WireServer() as wire:
        wire.push(first, Reply(body), Reply(anthropic_body))
        # a priced model: its cost is worked out from the usage
        model = lw.get_model(
            "openai/gpt-4o-mini", base_url=wire.url + "/v1", api_key="sk-t1234567", config=ONCE
        )
        assert (await model.generate(HI)).usage is not None
        out = await model.generate(HI)
        assert out.text == "kept" and out.usage is None
        # the first call's usage stands, untouched by the second's
        assert model.usage.input_tokens == 7 and model.usage.total_tokens == 10
        out = await _anthropic(wire.url).generate(HI)
        assert out.text == "kept" and out.usage is None


@pytest.mark.parametrize("count", NO_COUNTS.values(), ids=NO_COUNTS.keys())
async def test_a_streamed_token_count_that_is_no_count_makes_the_usage_unknown(
    count: str,
) -> None:
    usage = f'data: {{"choices": [], "usage": {{"prompt_tokens": {count}}}}}\n\n'.encode()
    with SSEServer() as sse:
        sse.push(Stream([openai_delta(content="kept", finish="stop"), usage, OPENAI_DONE]))
        seen: list[Any] = []
        with stream_to(seen.append):
            out = await _openai(sse.url).generate(HI)
        assert out.text == "kept" and out.usage is None


# --- a 200 that is no reply --------------------------------------------------------------

NOT_REPLIES = {
    "an HTML page": Reply(
        b"<html><body>502 Bad Gateway</body></html>", headers={"content-type": "text/html"}
    ),
    "an empty object": Reply({}),
    "a list": Reply([1, 2]),
    "content that is not a list": Reply({"type": "message", "content": "hi"}),
}


@pytest.mark.parametrize("reply", NOT_REPLIES.values(), ids=NOT_REPLIES.keys())
async def test_an_anthropic_200_that_is_no_message_is_a_retryable_error(reply: Reply) -> None:
    with WireServer() as wire:
        wire.push(reply, anthropic_reply({"type": "text", "text": "the reply"}))
        model = _anthropic(wire.url)
        with pytest.raises(lw.ModelAPIError) as info:
            await model.generate(HI)  # not an empty reply the run would take as the answer
        assert info.value.retryable and "malformed response" in str(info.value)
        assert (await model.generate(HI)).text == "the reply"


# --- replies too large: gzip bombs, huge bodies, events that never end --------------------

LIMIT = 2**20
PAD = 8 * LIMIT  # what a small bomb inflates to


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replies are read up to 1 MiB (the limit is 64 MiB), so no test inflates gigabytes."""
    monkeypatch.setattr(
        "loopwright.model.providers._sdk_clients.MAX_RESPONSE_BYTES", LIMIT, raising=False
    )


def _padded(reply: dict[str, Any], size: int) -> bytes:
    return json.dumps({**reply, "padding": " " * size}).encode()


BOMB = gzip.compress(_padded(openai_reply("x"), PAD))
assert len(BOMB) < PAD // 100  # a few kilobytes
BODIES = {
    "a gzip bomb": (BOMB, {"content-encoding": "gzip"}),
    "a huge body": (_padded(openai_reply("x"), PAD), {}),
}


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize(("body", "headers"), BODIES.values(), ids=BODIES.keys())
async def test_a_reply_larger_than_the_limit_is_not_read_further(
    body: bytes, headers: dict[str, str]
) -> None:
    anthropic_body = _padded(anthropic_reply({"type": "text", "text": "x"}), PAD)
    if headers:
        anthropic_body = gzip.compress(anthropic_body)
    with WireServer() as wire:
        wire.push(Reply(body, headers=headers), Reply(anthropic_body, headers=headers))
        for model in (_openai(wire.url), _anthropic(wire.url)):
            with pytest.raises(lw.ModelAPIError) as info:
                await model.generate(HI, config=lw.GenerateConfig(max_retries=2))
            assert f"more than {LIMIT:,} bytes" in str(info.value)
            assert not info.value.retryable and model.name in str(info.value)
        assert len(wire.requests) == 2  # not retried


@pytest.mark.usefixtures("small_limit")
async def test_a_compressed_reply_within_the_limit_is_read() -> None:
    body = _padded(openai_reply("compressed"), LIMIT // 2)
    with WireServer() as wire:
        wire.push(Reply(gzip.compress(body), headers={"content-encoding": "gzip"}))
        assert (await _openai(wire.url).generate(HI)).text == "compressed"


@pytest.mark.usefixtures("small_limit")
async def test_a_stream_event_that_never_ends_is_not_read_further() -> None:
    endless = [b"data: " + b"x" * 65536] + [b"x" * 65536] * (PAD // 65536)
    with SSEServer() as sse:
        sse.push(Stream(endless), Stream([b"event: message_start\n", *endless]))
        for model in (_openai(sse.url), _anthropic(sse.url)):
            with pytest.raises(lw.ModelAPIError) as info, stream_to(lambda delta: None):
                await model.generate(HI)
            message = str(info.value)
            assert f"an event of its stream is more than {LIMIT:,} bytes" in message
            assert not info.value.retryable


@pytest.mark.usefixtures("small_limit")
async def test_a_long_stream_of_small_events_is_read_whole() -> None:
    pieces = ["y" * 100] * 8000  # 800,000 characters, in events of some 250 bytes
    with SSEServer() as sse:
        sse.push(Stream(openai_text_stream(pieces)))
        with stream_to(lambda delta: None):
            out = await _openai(sse.url).generate(HI)
        assert out.text == "".join(pieces)
        assert sum(len(event) for event in openai_text_stream(pieces)) > 2 * LIMIT


# --- a stream longer than max_output_chars -----------------------------------------------

CHARS = 20_000  # reached before the server begins to wait
PIECE = "z" * 1000
NEVER = 40  # events the server sends before it waits, 10 s an event, for a gate never opened


def _endless(events: list[bytes]) -> Stream:
    """``events`` then, after ``NEVER`` of them, one every 10 s: a stream without end."""
    return Stream(events, gate=threading.Event(), gate_after=NEVER)


ENDLESS = {
    "openai text": (
        [openai_delta(role="assistant", content="")] + [openai_delta(content=PIECE)] * (2 * NEVER)
    ),
    "openai tool arguments": (
        [openai_tool_delta(0, id="call_1", name="echo", arguments='{"text": "')]
        + [openai_tool_delta(0, arguments=PIECE)] * (2 * NEVER)
    ),
    "anthropic text": [anthropic_start(), *anthropic_text_block(0, [PIECE] * (2 * NEVER))],
    "anthropic tool input": [
        anthropic_start(),
        *anthropic_tool_block(0, "toolu_1", "echo", ['{"text": "', *[PIECE] * (2 * NEVER)]),
    ],
}


@pytest.mark.parametrize("events", ENDLESS.values(), ids=ENDLESS.keys())
async def test_a_stream_longer_than_max_output_chars_is_read_no_further(
    events: list[bytes],
) -> None:
    echo = lw.ToolInfo(
        name="echo",
        description="Echo.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    config = lw.GenerateConfig(max_output_chars=CHARS)
    with SSEServer() as sse:
        sse.push(_endless(events))
        model = _anthropic(sse.url) if b"message_start" in events[0] else _openai(sse.url)
        seen: list[Any] = []
        with stream_to(seen.append):
            # (read to its end, the stream would take minutes: the bound is generous)
            out = await asyncio.wait_for(model.generate(HI, [echo], config), 60)
    assert out.stop_reason == "max_tokens"
    assert sum(len(d.text) for d in seen) <= CHARS + len(PIECE)
    if out.tool_calls:  # cut short: not run
        [call] = out.tool_calls
        assert call.arguments == {} and call.parse_error
    else:
        assert out.text.startswith("z" * CHARS) and "output cut here" in out.text


# --- a 200 that echoes the request -------------------------------------------------------

ECHOES = {
    "no choices": {"headers": {"api-key": HEADER_SECRET}, "choices": []},
    "a choice without a message": {"choices": [{"message": None, "echo": HEADER_SECRET}]},
}


@pytest.mark.parametrize("body", ECHOES.values(), ids=ECHOES.keys())
async def test_a_reply_echoing_the_headers_keeps_them_out_of_the_error(
    body: dict[str, Any],
) -> None:
    anthropic_echo = {"headers": {"x-custom-auth": HEADER_SECRET}}
    with WireServer() as wire:
        wire.push(Reply(body), Reply(anthropic_echo))
        for model in (_openai(wire.url), _anthropic(wire.url)):
            with pytest.raises(lw.ModelAPIError) as info:
                await model.generate(HI)
            assert info.value.retryable and model.name in str(info.value)
            assert "header-se" not in str(info.value)  # (nor a part of it, cut)
            if model.name.startswith("openai"):  # (the echo is in the message)
                assert "[redacted]" in str(info.value)


# --- an error event in a stream, after its 200 -------------------------------------------


def _openai_error_event(kind: str) -> bytes:
    error = {"message": f"{kind} in the stream", "type": kind, "code": kind}
    return b"data: " + json.dumps({"error": error}).encode() + b"\n\n"


STREAM_ERRORS = {
    "openai": (
        _openai,
        lambda kind: [_openai_error_event(kind)],
        openai_text_stream(["fine"]),
        "server_error",
    ),
    "anthropic": (
        _anthropic,
        lambda kind: [anthropic_start(), anthropic_event("error", error={"type": kind})],
        [anthropic_start(), *anthropic_text_block(0, ["fine"]), *anthropic_end()],
        "overloaded_error",
    ),
}


@pytest.mark.parametrize(
    ("make", "error", "good", "transient"), STREAM_ERRORS.values(), ids=STREAM_ERRORS.keys()
)
async def test_a_transient_error_event_in_a_stream_is_retried(
    make: Any, error: Any, good: list[bytes], transient: str
) -> None:
    config = lw.GenerateConfig(max_retries=1, retry_wait=0.01)
    with SSEServer() as sse:
        sse.push(Stream(error(transient)), Stream(good), Stream(error("invalid_request_error")))
        model = make(sse.url)
        with stream_to(lambda delta: None):
            assert (await model.generate(HI, config=config)).text == "fine"
            with pytest.raises(lw.ModelAPIError) as info:  # the request's fault: not retried
                await model.generate(HI, config=config)
        assert not info.value.retryable and "invalid_request_error" in str(info.value)
        assert len(sse.bodies) == 3


# --- a stream cut by its deadline --------------------------------------------------------


async def test_a_stream_past_its_deadline_after_text_is_cut_not_retried() -> None:
    config = lw.GenerateConfig(timeout=3, max_retries=2, retry_wait=0.01)
    with SSEServer() as sse:
        # 20 pieces, one every 0.5 s: the 3 s deadline passes half-way
        sse.push(
            Stream(openai_text_stream(["a"] * 20), interval=0.5),
            Stream(openai_text_stream(["b"])),
        )
        seen: list[Any] = []
        with pytest.raises(StreamCutError) as info, stream_to(seen.append):
            await _openai(sse.url).generate(HI, config=config)
        text = "".join(d.text for d in seen)
        assert text and set(text) == {"a"}  # never the retry's text after it
        assert len(sse.bodies) == 1 and "did not finish within 3s" in str(info.value)


# --- an error echoing the key, encoded ---------------------------------------------------

ODD_KEY = "key+with/odd=chars&12345"


@pytest.mark.parametrize(
    "echo",
    [
        quote(ODD_KEY, safe=""),
        base64.b64encode(ODD_KEY.encode()).decode(),
        base64.urlsafe_b64encode(ODD_KEY.encode()).decode().rstrip("="),
    ],
    ids=["percent-encoded", "base64", "url-safe base64"],
)
async def test_an_error_echoing_the_key_encoded_is_redacted(echo: str) -> None:
    with WireServer() as wire:
        wire.push(Reply({"error": {"message": f"no such key: {echo}"}}, status=401))
        model = lw.get_model(
            "openai/test-model", base_url=wire.url + "/v1", api_key=ODD_KEY, config=ONCE
        )
        with pytest.raises(lw.ModelAPIError) as info:
            await model.generate(HI)
        assert echo not in str(info.value) and "no such key: [redacted]" in str(info.value)


# --- a server that does not stream -------------------------------------------------------


async def test_a_streamed_request_answered_with_one_json_body_is_read_whole() -> None:
    with WireServer() as wire:
        wire.push(
            openai_reply("all at once", reasoning_content="thought"),
            Reply({"error": {"message": "streaming is not supported"}}),
            Reply(b"{not json"),
        )
        model = _openai(wire.url)
        seen: list[Any] = []
        with stream_to(seen.append):
            out = await model.generate(HI)
            assert out.text == "all at once" and out.usage is not None
            assert [d.text for d in seen] == ["thought", "all at once"]
            with pytest.raises(lw.ModelAPIError) as info:
                await model.generate(HI)
            assert "streaming is not supported" in str(info.value)
            with pytest.raises(lw.ModelAPIError) as info:
                await model.generate(HI)
            assert info.value.retryable and "could not be read" in str(info.value)
        assert wire.requests[0].body["stream"] is True
