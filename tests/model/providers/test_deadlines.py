"""A provider that hangs or drips bytes ends: the deadline bounds the whole attempt, not
each read. A real server on 127.0.0.1 sends a reply one byte every 0.2 s."""

from __future__ import annotations

import time

import pytest

import loopwright as lw

from .wire_server import Reply, WireServer, anthropic_reply, openai_reply

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
DEADLINE = lw.GenerateConfig(timeout=1, max_retries=1, retry_wait=0.01, max_retry_wait=0.05)


def openai_model(wire: WireServer) -> lw.Model:
    pytest.importorskip("openai", reason="the openai SDK is not installed")
    return lw.get_model("openai/drip", base_url=wire.url + "/v1", api_key="sk-t", config=DEADLINE)


def anthropic_model(wire: WireServer) -> lw.Model:
    pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    return lw.get_model("anthropic/drip", base_url=wire.url, api_key="sk-t", config=DEADLINE)


@pytest.mark.parametrize(
    ("make", "reply"),
    [(openai_model, openai_reply("x" * 200)), (anthropic_model, anthropic_reply())],
    ids=["openai", "anthropic"],
)
async def test_a_server_dripping_bytes_is_cut_off_at_the_deadline(
    wire: WireServer, make: object, reply: dict[str, object]
) -> None:
    model = make(wire)  # type: ignore[operator]
    # each reply takes 60+ s to send, though no read ever waits more than 0.2 s
    wire.push(Reply(reply, drip=0.2), Reply(reply, drip=0.2))
    start = time.monotonic()
    with pytest.raises(lw.ModelTimeoutError) as info:
        await model.generate(HI)
    elapsed = time.monotonic() - start
    assert elapsed < 10  # two attempts of 1 s (and a short backoff)
    assert "did not answer within 1s" in str(info.value)  # the real deadline
    assert "gave up after 2 attempts" in " ".join(info.value.__notes__)
    assert len(wire.requests) == 2


async def test_a_dripping_attempt_then_a_prompt_one_succeeds(wire: WireServer) -> None:
    model = openai_model(wire)
    wire.push(Reply(openai_reply("slow"), drip=0.2), openai_reply("prompt"))
    out = await model.generate(HI)
    assert out.text == "prompt"
