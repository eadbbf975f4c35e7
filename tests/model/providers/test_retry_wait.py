"""A server's Retry-After against ``GenerateConfig.max_retry_wait``, over real HTTP on
127.0.0.1 in each provider's wire format: a wait within the cap is honoured, one beyond
it is not slept (the call fails at once, naming the wait, and a fallback answers), and a
time limit ends a wait at its deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import loopwright as lw
from loopwright.model._stream import stream_to

from .sse_server import anthropic_end, anthropic_start, anthropic_text_block, openai_text_stream
from .wire_server import (
    Reply,
    WireServer,
    anthropic_error,
    anthropic_reply,
    openai_error,
    openai_reply,
)

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")
pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
CAPPED = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.5, max_retries=3, timeout=30)
BOUND = 20.0  # seconds a test may take at most (the wait asked for is 30 s)


def _openai(wire: WireServer, config: lw.GenerateConfig = CAPPED, **kw: Any) -> lw.Model:
    return lw.get_model(
        "openai/test-model", base_url=wire.url + "/v1", api_key="sk-test", config=config, **kw
    )


def _anthropic(wire: WireServer, config: lw.GenerateConfig = CAPPED, **kw: Any) -> lw.Model:
    return lw.get_model(
        "anthropic/claude-test", base_url=wire.url, api_key="sk-ant-test", config=config, **kw
    )


def _openai_429(after: str) -> Reply:
    body = openai_error("Rate limit reached", kind="rate_limit_error")
    return Reply(body, 429, {"retry-after": after})


def _anthropic_429(after: str) -> Reply:
    return Reply(anthropic_error("rate_limit_error", "slow down"), 429, {"retry-after": after})


SSE = {"content-type": "text/event-stream"}
PROVIDERS = {
    "openai": (
        _openai,
        _openai_429,
        Reply(openai_reply("done")),
        Reply(b"".join(openai_text_stream(["do", "ne"])), headers=SSE),
    ),
    "anthropic": (
        _anthropic,
        _anthropic_429,
        Reply(anthropic_reply({"type": "text", "text": "done"})),
        Reply(
            b"".join([anthropic_start(), *anthropic_text_block(0, ["do", "ne"]), *anthropic_end()]),
            headers=SSE,
        ),
    ),
}
Make = Callable[..., lw.Model]


async def _generate(model: lw.Model, streamed: bool) -> lw.ModelOutput:
    if not streamed:
        return await asyncio.wait_for(model.generate(HI), BOUND)
    with stream_to(lambda delta: None):
        return await asyncio.wait_for(model.generate(HI), BOUND)


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize(
    ("make", "limited", "ok", "ok_streamed"), PROVIDERS.values(), ids=PROVIDERS.keys()
)
@pytest.mark.parametrize("after", ["30", "700"])
async def test_a_retry_after_beyond_max_retry_wait_fails_at_once(
    make: Make,
    limited: Callable[[str], Reply],
    ok: Reply,
    ok_streamed: Reply,
    streamed: bool,
    after: str,
) -> None:
    with WireServer() as wire:
        wire.push(limited(after), ok_streamed if streamed else ok)
        model = make(wire)
        with pytest.raises(lw.ModelAPIError) as info:
            await _generate(model, streamed)
        message = str(info.value)
        assert f"the server asked to wait {after} s before a retry" in message
        assert "beyond max_retry_wait (0.5 s)" in message
        assert "HTTP 429" in message and model.name in message
        assert info.value.status_code == 429 and info.value.retry_after == float(after)
        assert len(wire.requests) == 1  # not retried


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize(
    ("make", "limited", "ok", "ok_streamed"), PROVIDERS.values(), ids=PROVIDERS.keys()
)
async def test_a_retry_after_beyond_the_cap_hands_the_call_to_the_fallback(
    make: Make, limited: Callable[[str], Reply], ok: Reply, ok_streamed: Reply, streamed: bool
) -> None:
    with WireServer() as wire, WireServer() as backup:
        wire.push(limited("30"))
        backup.push(openai_reply("from the backup"))
        model = make(wire, fallbacks=[_openai(backup)])
        out = await _generate(model, streamed)
        assert out.text == "from the backup" and out.model == "openai/test-model"
        assert len(wire.requests) == 1 and len(backup.requests) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize(
    ("make", "limited", "ok", "ok_streamed"), PROVIDERS.values(), ids=PROVIDERS.keys()
)
async def test_a_retry_after_within_max_retry_wait_is_honoured(
    make: Make, limited: Callable[[str], Reply], ok: Reply, ok_streamed: Reply, streamed: bool
) -> None:
    with WireServer() as wire:
        wire.push(limited("0.2"), ok_streamed if streamed else ok)
        out = await _generate(make(wire), streamed)
        assert out.text == "done"
        first, second = wire.requests
        assert second.time - first.time >= 0.2  # the wait the server asked for was kept


async def test_a_time_limit_ends_a_retry_wait_at_its_deadline() -> None:
    # the cap allows the 30 s asked for; the run's time limit (1 s) cancels the wait
    with WireServer() as wire:
        wire.push(_openai_429("30"), openai_reply("too late"))
        model = _openai(wire, CAPPED.merge(lw.GenerateConfig(max_retry_wait=60)))
        with pytest.raises(lw.LimitExceededError) as info, lw.time_limit(1):
            await asyncio.wait_for(model.generate(HI), BOUND)
        assert info.value.type == "time"
        assert len(wire.requests) == 1


# --- a wait longer than the time left, when a fallback follows ---------------------------

ROOMY = CAPPED.merge(lw.GenerateConfig(max_retry_wait=60))  # the cap allows the waits


@pytest.mark.parametrize("failure", ["retry-after", "backoff"])
async def test_a_wait_beyond_the_time_left_hands_the_call_to_the_fallback(failure: str) -> None:
    with WireServer() as wire, WireServer() as backup:
        if failure == "retry-after":  # 10 s asked for, 3 s left
            wire.push(_openai_429("10"), openai_reply("too late"))
            config = ROOMY
        else:  # a 500, and a backoff of 10-20 s
            wire.push(Reply(openai_error("boom", kind="server_error"), 500), openai_reply("late"))
            config = ROOMY.merge(lw.GenerateConfig(retry_wait=20))
        backup.push(openai_reply("from the backup"))
        model = _openai(wire, config, fallbacks=[_openai(backup)])
        with lw.time_limit(3):
            out = await asyncio.wait_for(model.generate(HI), BOUND)
        assert out.text == "from the backup"
        assert len(wire.requests) == 1 and len(backup.requests) == 1


async def test_without_a_fallback_the_time_limit_ends_the_wait() -> None:
    # the last model of the chain waits: the run ends with its time limit, as a limit
    with WireServer() as wire, WireServer() as backup:
        wire.push(_openai_429("10"))
        backup.push(_openai_429("10"), openai_reply("too late"))
        model = _openai(wire, ROOMY, fallbacks=[_openai(backup, ROOMY)])
        with pytest.raises(lw.LimitExceededError) as info, lw.time_limit(2):
            await asyncio.wait_for(model.generate(HI), BOUND)
        assert info.value.type == "time"
        assert len(wire.requests) == 1 and len(backup.requests) == 1


async def test_a_working_limit_does_not_cut_a_wait_it_does_not_count() -> None:
    with WireServer() as wire, WireServer() as backup:
        wire.push(_openai_429("1.5"), openai_reply("after the wait"))
        backup.push(openai_reply("from the backup"))
        model = _openai(wire, ROOMY, fallbacks=[_openai(backup)])
        with lw.working_limit(1):
            out = await asyncio.wait_for(model.generate(HI), BOUND)
        assert out.text == "after the wait"
        assert len(wire.requests) == 2 and backup.requests == []
