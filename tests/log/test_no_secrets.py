"""Secrets never reach the run store: a run with a keyed model (and a base_url with a
password) leaves no trace of either in the SQLite file's bytes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
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


class ThirdPartyAPI(lw.ModelAPI):
    """A provider written outside loopwright: it keeps its credential under a name of its
    own (only :meth:`secrets` says what it is) and fails with ``message``."""

    provider = "thirdparty"
    model_name = "m"

    def __init__(self, credential: str, message: str) -> None:
        self._credential = credential
        self._message = message

    def secrets(self) -> Sequence[str]:
        return (self._credential,)

    async def generate(
        self, messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: object
    ) -> lw.ModelOutput:
        raise lw.ModelAPIError(self._message)


def model_events(db: Path) -> list[lw.ModelEvent]:
    [info] = lw.list_runs(db)
    with lw.load_run(info.id, db=db) as log:
        return [ev for ev in log.events() if isinstance(ev, lw.ModelEvent)]


async def test_a_third_party_providers_secrets_and_secret_shapes_stay_out_of_the_store(
    tmp_path: Path,
) -> None:
    """The credential a provider declares by ``ModelAPI.secrets()`` is redacted from its
    recorded error and the run's, and so is anything shaped like a secret (a Bearer
    token it was never told about), in the store and in the transcript alike."""
    credential = "tp-cred-5e2b7c19d04f"
    bearer = "eyJhbGciOiJIUzI1NiJ9.payload-0123456789"
    message = f"denied for credential {credential} (header was 'Authorization: Bearer {bearer}')"
    model = lw.Model(ThirdPartyAPI(credential, message), lw.GenerateConfig(max_retries=0))
    db = tmp_path / "runs.db"
    with pytest.raises(lw.ModelAPIError):
        await lw.run(lw.react(model=model), "hi", db=db)
    data = file_bytes(db)
    assert b"denied for credential" in data  # the error is recorded
    assert credential.encode() not in data and bearer.encode() not in data
    [ev] = model_events(db)
    assert ev.error == (
        "ModelAPIError: denied for credential [redacted] "
        "(header was 'Authorization: Bearer [redacted]')"
    )
    [info] = lw.list_runs(db)
    assert info.error is not None and "Bearer [redacted]" in info.error
    assert credential not in info.error and bearer not in info.error


async def test_a_huge_model_error_is_recorded_bounded(tmp_path: Path) -> None:
    """A provider whose error text holds a whole response (here 2 MB) records about
    16,000 characters of it, for the model call and for the run."""
    huge = "<html>" + "x" * 2_000_000 + "</html>"
    model = lw.Model(ThirdPartyAPI("unused-credential", huge), lw.GenerateConfig(max_retries=0))
    db = tmp_path / "runs.db"
    with pytest.raises(lw.ModelAPIError):
        await lw.run(lw.react(model=model), "hi", db=db)
    [ev] = model_events(db)
    assert ev.error is not None and ev.error.startswith("ModelAPIError: <html>xxx")
    assert 16_000 <= len(ev.error) < 16_100
    assert ev.error.endswith("characters cut]\n")
    [info] = lw.list_runs(db)
    assert info.error is not None and len(info.error) < 16_100
    with lw.load_run(info.id, db=db) as log:
        [err] = [e for e in log.events() if isinstance(e, lw.ErrorEvent)]
    assert len(err.message) < 16_100
    assert err.traceback is not None and len(err.traceback) < 16_100
    assert err.traceback.rstrip().endswith("</html>")  # a traceback keeps its end
    assert len(file_bytes(db)) < 1_000_000
