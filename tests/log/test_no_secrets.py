"""Secrets never reach the run store: a run with a keyed model (and a base_url with a
password) leaves no trace of either in the SQLite file's bytes."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import loopwright as lw
from tests.model.providers.wire_server import Reply, WireServer, openai_error, openai_reply

KEY = "sk-live-6a1f0c93e2d84b7fa5c1secretKEY"
PASSWORD = "hunter2-Pa55word-9f3e"
TOKEN = "tok-body-8c1e55aa90f2"


def file_bytes(db: Path) -> bytes:
    """The store and anything SQLite keeps beside it."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


@lw.tool
def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: One.
        b: Two.
    """
    return a + b


@pytest.mark.parametrize("log_level", [logging.INFO, logging.DEBUG])
async def test_a_keyed_model_leaves_no_trace_of_its_key_in_the_store(
    tmp_path: Path, log_level: int
) -> None:
    db = tmp_path / "runs.db"
    with WireServer() as wire:
        wire.push(
            openai_reply(None, tool_calls=[("call_1", "add", '{"a": 2, "b": 3}')]),
            openai_reply("5", tool_calls=[("call_2", "submit", '{"answer": "5"}')]),
        )
        host = wire.url.removeprefix("http://")
        model = lw.get_model(
            "openai/test-model",
            base_url=f"http://user:{PASSWORD}@{host}/v1",
            api_key=KEY,
            config=lw.GenerateConfig(
                max_retries=0, timeout=10, extra_body={"auth": {"access_token": TOKEN}}
            ),
        )
        async with lw.recording(name="keyed", model=model, db=db, log_level=log_level):
            state = await lw.react(tools=[add], model=model)(
                lw.AgentState(messages=[lw.UserMessage(content="2+3?")])
            )
        assert state.text == "5"
        assert len(wire.requests) == 2  # the model really was called
    data = file_bytes(db)
    assert b"call_1" in data  # the run is there
    assert KEY.encode() not in data
    assert PASSWORD.encode() not in data
    assert TOKEN.encode() not in data  # a secret-named field of extra_body


async def test_a_key_echoed_by_the_provider_or_a_tool_is_redacted_in_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever text carries a known secret (an error body that echoes the key, a tool that
    prints the environment), the store holds ``[redacted]`` instead."""
    from loopwright.model import _redact

    token = "ghp_tokenFromTheEnvironment0123456789"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", token)
    monkeypatch.setattr(_redact, "_env_done", False)
    db = tmp_path / "runs.db"

    @lw.tool
    def show_env() -> str:
        """Print the environment."""
        return f"SOME_SERVICE_TOKEN={token}\nHOME=/root"

    with WireServer() as wire:
        wire.push(
            openai_reply(None, tool_calls=[("call_1", "show_env", "{}")]),
            Reply(openai_error(f"Incorrect API key provided: {KEY}"), 401),
        )
        host = wire.url.removeprefix("http://")
        model = lw.get_model(
            "openai/test-model",
            base_url=f"http://user:{PASSWORD}@{host}/v1",
            api_key=KEY,
            config=lw.GenerateConfig(max_retries=0, timeout=10),
        )
        with pytest.raises(lw.ModelAPIError):
            await lw.run(lw.react(tools=[show_env], model=model), "env?", db=db)
        assert len(wire.requests) == 2
    data = file_bytes(db)
    assert b"Incorrect API key provided" in data and b"SOME_SERVICE_TOKEN=" in data
    assert b"[redacted]" in data
    for secret in (KEY, PASSWORD, token):
        assert secret.encode() not in data, secret
    [info] = lw.list_runs(db)
    assert info.error is not None and KEY not in info.error


def test_redaction_keeps_json_valid_and_is_linear() -> None:
    import json
    import time

    from loopwright.model import _redact

    odd = 'pa"ss\\word-Ünïcode-0123'
    _redact.learn_secrets([odd])
    text = json.dumps({"a": f"x {odd} y", "b": [odd]})
    out = _redact.redact_known(text)
    assert json.loads(out) == {"a": "x [redacted] y", "b": ["[redacted]"]}
    assert _redact.redact_known(f"plain {odd}", plain=True) == "plain [redacted]"
    big = "z" * 5_000_000
    t0 = time.monotonic()
    assert _redact.redact_known(big) is big  # nothing found: nothing copied
    assert time.monotonic() - t0 < 1.0
