"""Fallback models against real HTTP servers on 127.0.0.1: a model that keeps failing
(500s after its retries, or out of quota) hands the call to the next model; the
transcript says which model answered."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopwright as lw

from .wire_server import Reply, Request, WireServer, openai_error, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.02, max_retries=2)
HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]


@pytest.fixture
def backup() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def on(wire: WireServer, name: str, **kwargs: object) -> lw.Model:
    return lw.get_model(
        name, base_url=wire.url + "/v1", api_key="sk-test-fallback", config=FAST, **kwargs
    )


def always(reply: Reply) -> object:
    def respond(_: Request) -> Reply:
        return reply

    return respond


async def test_repeated_500s_fall_back_and_the_transcript_says_who_answered(
    wire: WireServer, backup: WireServer, tmp_path: Path
) -> None:
    wire.respond = always(Reply(openai_error("boom", kind="server_error"), 500))  # type: ignore[assignment]
    backup.push(openai_reply("from the backup"))
    second = on(backup, "openai/gpt-4o-mini")
    first = on(wire, "openai/primary", fallbacks=[second])

    async def agent(state: lw.AgentState) -> lw.AgentState:
        state.output = await lw.get_model().generate(state.messages)
        return state

    db = tmp_path / "runs.db"
    state = await lw.run(agent, "hi", model=first, db=db)
    assert state.text == "from the backup"
    assert len(wire.requests) == 3  # the first model used its retries (2) first
    assert len(backup.requests) == 1
    assert state.output is not None and state.output.model == "openai/gpt-4o-mini"
    (event,) = [
        e for e in lw.load_run(state.run_id, db=db).events() if isinstance(e, lw.ModelEvent)
    ]
    assert event.model == "openai/primary"  # the model called
    assert event.output is not None and event.output.model == "openai/gpt-4o-mini"
    assert event.fallbacks is not None and len(event.fallbacks) == 1
    assert event.fallbacks[0].startswith("openai/primary: ") and "HTTP 500" in event.fallbacks[0]
    assert event.retries == 2
    # the answer is priced as the model that gave it: 10 in, 5 out at gpt-4o-mini's rates
    assert event.cost == pytest.approx((10 * 0.15 + 5 * 0.6) / 1e6)
    assert second.usage.total_tokens == 15 and first.usage.total_tokens == 0


async def test_out_of_quota_falls_back_at_once(wire: WireServer, backup: WireServer) -> None:
    wire.push(Reply(openai_error("You exceeded your current quota", "insufficient_quota"), 402))
    backup.push(openai_reply("ok"))
    m = on(wire, "openai/primary", fallbacks=[on(backup, "openai/backup")])
    out = await m.generate(HI)
    assert out.text == "ok" and out.model == "openai/backup"
    assert len(wire.requests) == 1  # a 402 is not retried: it falls back straight away


async def test_a_bad_request_does_not_fall_back(wire: WireServer, backup: WireServer) -> None:
    wire.push(Reply(openai_error("bad field"), 400))
    m = on(wire, "openai/primary", fallbacks=[on(backup, "openai/backup")])
    with pytest.raises(lw.ModelAPIError, match="HTTP 400"):
        await m.generate(HI)
    assert backup.requests == []


async def test_when_every_model_fails_the_last_error_says_so(
    wire: WireServer, backup: WireServer
) -> None:
    wire.respond = always(Reply(openai_error("boom", kind="server_error"), 500))  # type: ignore[assignment]
    backup.respond = always(Reply(openai_error("busy", kind="server_error"), 503))  # type: ignore[assignment]
    m = on(wire, "openai/primary", fallbacks=[on(backup, "openai/backup")])
    with pytest.raises(lw.ModelAPIError) as info:
        await m.generate(HI)
    assert info.value.status_code == 503
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "every fallback failed" in notes and "sk-test-fallback" not in notes
    assert "openai/primary: " in notes and "openai/backup: " in notes
    assert len(wire.requests) == 3 and len(backup.requests) == 3


async def test_a_fallback_with_another_tool_protocol_renders_its_own_request(
    wire: WireServer,
) -> None:
    wire.respond = always(Reply(openai_error("boom", kind="server_error"), 500))  # type: ignore[assignment]
    local = lw.get_model(
        "mock/backup", outputs=['{"tool": "add", "arguments": {"a": 1}}'], tool_protocol="json"
    )
    m = on(wire, "openai/primary", fallbacks=[local])
    add = lw.ToolInfo(
        name="add",
        description="Add.",
        parameters={"type": "object", "properties": {"a": {"type": "number"}}},
    )
    out = await m.generate(HI, [add])
    assert out.model.startswith("mock")
    assert [c.function for c in out.tool_calls] == ["add"]


def test_fallbacks_by_name_and_wrong_kinds() -> None:
    m = lw.get_model("mock", fallbacks=["mock/two", lw.get_model("mock/three")])
    assert [f.name for f in m.fallbacks] == ["mock/two", "mock/three"]
    with pytest.raises(lw.ConfigurationError, match="fallbacks must be a list"):
        lw.get_model("mock", fallbacks="mock/two")  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError):
        lw.get_model(m, fallbacks=["mock"])
    with pytest.raises(lw.ConfigurationError, match="fallbacks must be Models"):
        lw.Model(m.api, fallbacks=["mock"])  # type: ignore[list-item]


async def test_a_429_storm_lowers_the_connections_and_successes_restore_them(
    wire: WireServer,
) -> None:
    from loopwright.model._slots import slots_for

    calm, storm = 16, 24  # 16 answers, then 24 rate limits, then answers again

    def respond(request: Request) -> Reply:
        n = len(wire.requests)
        if calm < n <= calm + storm:
            return Reply(
                openai_error("Rate limit reached", kind="rate_limit_error"),
                429,
                {"retry-after-ms": "5"},
                delay=0.05,
            )
        return Reply(openai_reply("ok"), delay=0.3 if n <= calm else 0.1)

    wire.respond = respond
    config = lw.GenerateConfig(max_connections=8, max_retries=30, retry_wait=0.01)
    m = lw.get_model("openai/storm", base_url=wire.url + "/v1", api_key="sk-x", config=config)
    outs = await asyncio.gather(*(m.generate(HI) for _ in range(100)))
    assert all(o.text == "ok" for o in outs)
    seen = [r.in_flight for r in wire.requests]
    # (the server counts a request until its handler returns, a moment after the client
    # has its answer: it may see one more than the client has in flight)
    assert max(seen[:calm]) >= 7  # before the storm: the 8 connections in use
    assert max(seen) <= 9  # never more than max_connections
    after = seen[calm + storm :]
    assert max(after[:3]) <= 2  # after the storm: one connection (halved down to 1)
    # successes brought the connections back (well above the storm's 1-2; a loaded
    # machine may not issue all 8 at once, which the slots' own count below checks)
    assert max(after[40:]) >= 5
    slots = slots_for(m.api.connection_key(), 8)
    assert slots.allowed == 8 and slots.in_use == 0 and slots.level >= 3
