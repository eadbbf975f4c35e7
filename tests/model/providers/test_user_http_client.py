"""A user's own HTTP client (``http_client=``) gets the protections of ours, over real
servers on 127.0.0.1: no redirect followed (the other host gets nothing), a reply or a
stream's event read up to the bound; and the user's client is not changed."""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import loopwright as lw
from loopwright.model._stream import stream_to

from .sse_server import SSEServer, Stream
from .wire_server import Reply, WireServer, anthropic_reply, openai_reply

openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
httpx2 = pytest.importorskip("httpx2", reason="httpx2 (the SDKs' HTTP client) is not installed")

Make = Callable[[str, Any], lw.Model]
HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
ONCE = lw.GenerateConfig(max_retries=0, timeout=30)
HEADER_SECRET = "header-secret-7c1d0e"
LIMIT = 2**20
PAD = 8 * LIMIT


async def _log(response: Any) -> None:  # a hook of the user's own
    pass


def _user_client(kind: str, make: Make) -> Any:
    """A client as a user would give it: following redirects, with a hook and a header."""
    if kind == "httpx" and make is _anthropic:
        pytest.skip("the anthropic SDK takes httpx2 clients only")
    sdk = openai if make is _openai else anthropic
    cls = {
        "httpx": httpx.AsyncClient,
        "httpx2": httpx2.AsyncClient,
        "sdk-default": sdk.DefaultAsyncHttpxClient,
    }[kind]
    return cls(follow_redirects=True, event_hooks={"response": [_log]}, headers={"x-user": "mine"})


def _openai(url: str, client: Any) -> lw.Model:
    return lw.get_model(
        "openai/test-model",
        base_url=url + "/v1",
        api_key="sk-openai-secret-1234",
        default_headers={"api-key": HEADER_SECRET},
        http_client=client,
        config=ONCE,
    )


def _anthropic(url: str, client: Any) -> lw.Model:
    return lw.get_model(
        "anthropic/claude-test",
        base_url=url,
        api_key="sk-ant-secret-1234",
        default_headers={"x-custom-auth": HEADER_SECRET},
        http_client=client,
        config=ONCE,
    )


PROVIDERS = {
    "openai": (_openai, "/v1/chat/completions", openai_reply("from elsewhere")),
    "anthropic": (
        _anthropic,
        "/v1/messages",
        anthropic_reply({"type": "text", "text": "from elsewhere"}),
    ),
}
KINDS = ["httpx", "httpx2", "sdk-default"]


def _unchanged(client: Any) -> None:
    assert client.follow_redirects is True
    assert client.event_hooks["response"] == [_log]
    assert client.headers["x-user"] == "mine"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("make", "path", "reply"), PROVIDERS.values(), ids=PROVIDERS.keys())
@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
async def test_a_users_client_follows_no_redirect_to_another_host(
    make: Make, path: str, reply: dict[str, Any], kind: str, streamed: bool
) -> None:
    with WireServer() as server, WireServer() as elsewhere:
        elsewhere.push(reply)
        server.push(Reply({}, status=307, headers={"location": elsewhere.url + path}))
        client = _user_client(kind, make)
        model = make(server.url, client)
        sink = stream_to(lambda d: None) if streamed else contextlib.nullcontext()
        with pytest.raises(lw.ModelAPIError) as info, sink:
            await model.generate(HI)
        assert elsewhere.requests == []  # not the headers, not the conversation
        assert len(server.requests) == 1
        assert server.requests[0].headers["x-user"] == "mine"  # the user's client sent it
        message = str(info.value)
        assert "HTTP 307" in message and "redirects to " + elsewhere.url in message
        assert HEADER_SECRET not in message
        _unchanged(client)
        await client.aclose()


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replies are read up to 1 MiB (the limit is 64 MiB), so no test inflates gigabytes."""
    monkeypatch.setattr("loopwright.model.providers._sdk_clients.MAX_RESPONSE_BYTES", LIMIT)


def _padded(reply: dict[str, Any]) -> bytes:
    return json.dumps({**reply, "padding": " " * PAD}).encode()


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("make", "path", "reply"), PROVIDERS.values(), ids=PROVIDERS.keys())
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
async def test_a_users_client_reads_a_reply_up_to_the_bound(
    make: Make, path: str, reply: dict[str, Any], kind: str, gzipped: bool
) -> None:
    body = _padded(reply)
    headers = {"content-encoding": "gzip"} if gzipped else {}
    with WireServer() as wire:
        wire.push(Reply(gzip.compress(body) if gzipped else body, headers=headers))
        client = _user_client(kind, make)
        with pytest.raises(lw.ModelAPIError) as info:
            await make(wire.url, client).generate(HI)
        assert f"more than {LIMIT:,} bytes" in str(info.value)
        assert not info.value.retryable
        _unchanged(client)
        await client.aclose()


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("make", "path", "reply"), PROVIDERS.values(), ids=PROVIDERS.keys())
async def test_a_users_client_reads_a_stream_event_up_to_the_bound(
    make: Make, path: str, reply: dict[str, Any], kind: str
) -> None:
    endless = [b"data: " + b"x" * 65536] + [b"x" * 65536] * (PAD // 65536)
    with SSEServer() as sse:
        sse.push(Stream(endless))
        client = _user_client(kind, make)
        with pytest.raises(lw.ModelAPIError) as info, stream_to(lambda delta: None):
            await make(sse.url, client).generate(HI)
        assert f"an event of its stream is more than {LIMIT:,} bytes" in str(info.value)
        _unchanged(client)
        await client.aclose()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("make", "path", "reply"), PROVIDERS.values(), ids=PROVIDERS.keys())
async def test_a_users_client_still_answers_with_its_own_settings(
    make: Make, path: str, reply: dict[str, Any], kind: str
) -> None:
    with WireServer() as wire:
        wire.push(reply)
        client = _user_client(kind, make)
        model = make(wire.url, client)
        out = await model.generate(HI)
        assert out.text == "from elsewhere"
        assert wire.requests[0].headers["x-user"] == "mine"
        assert not client.is_closed
        await model.aclose()  # closed with the model, as the SDK closes a client it is given
        assert client.is_closed
