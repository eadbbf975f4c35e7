"""Hostile or broken servers against the HTTP providers, through real servers on
127.0.0.1: each ends in an output or a clear error, and never hands a secret to
another host."""

from __future__ import annotations

from typing import Any

import pytest

import loopwright as lw

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
