"""Secrets stay out of the run store, logs and messages: a ``base_url`` with credentials
and a provider that echoes the API key in its error body, against a real server on
127.0.0.1 and a real SQLite file."""

from __future__ import annotations

import base64
import logging
import socket
from pathlib import Path

import pytest

import loopwright as lw

from .wire_server import Reply, WireServer, openai_error

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

KEY = "sk-proj-Secret0123456789abcdefSECRET"
PASSWORD = "hunter2-Pa55word"
FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05, max_retries=1)


def echo_key(status: int = 401) -> Reply:
    """What OpenAI answers to a wrong key: the key, barely masked (some servers send it
    whole)."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    message = f"Incorrect API key provided: {KEY}. Header was 'Bearer {KEY}'."
    return Reply(openai_error(message, kind=kind), status)


def secrets_in(path: Path, *secrets: str) -> list[str]:
    data = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    return [s for s in secrets if s.encode() in data]


def run(model: lw.Model, db: Path) -> lw.AgentState:
    return lw.run_sync(lw.react(max_steps=3), "hi", model=model, db=db)


def test_no_secret_reaches_the_run_store_from_an_error_that_echoes_the_key(
    wire: WireServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wire.push(echo_key(500), echo_key(401))  # retried once (a logged warning), then fatal
    host = wire.url.removeprefix("http://")
    model = lw.get_model(
        "openai/test-model", base_url=f"http://user:{PASSWORD}@{host}/v1", api_key=KEY, config=FAST
    )
    db = tmp_path / "runs.db"
    with caplog.at_level(logging.DEBUG), pytest.raises(lw.ModelAPIError) as info:
        run(model, db)
    assert len(wire.requests) == 2
    assert "HTTP 401" in str(info.value)
    assert KEY not in str(info.value) and "Incorrect API key provided: [redacted]" in str(
        info.value
    )
    assert secrets_in(db, KEY, PASSWORD) == []
    stored = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))  # (its WAL too)
    assert "HTTP 401" in stored.decode("utf-8", "replace")  # the error is there
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP 500" in logged
    assert KEY not in logged and PASSWORD not in logged


def test_no_password_in_a_base_url_reaches_the_store_or_the_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as s:  # nothing listens: the error names the URL
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = lw.get_model(
        "openai/test-model",
        base_url=f"http://admin:{PASSWORD}@127.0.0.1:{port}/v1",
        api_key=KEY,
        config=FAST,
    )
    assert PASSWORD not in repr(model.api) and KEY not in repr(model.api)
    db = tmp_path / "runs.db"
    with caplog.at_level(logging.DEBUG), pytest.raises(lw.ModelAPIError) as info:
        run(model, db)
    message = str(info.value)
    assert f"http://127.0.0.1:{port}/v1" in message  # the URL, without its credentials
    assert PASSWORD not in message and "admin" not in message
    assert secrets_in(db, KEY, PASSWORD) == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "connection refused" in logged
    assert PASSWORD not in logged


async def test_credentials_in_the_url_are_still_sent_as_basic_auth(wire: WireServer) -> None:
    from .wire_server import openai_reply

    wire.push(openai_reply("ok"), openai_reply("ok"))
    host = wire.url.removeprefix("http://")
    url = f"http://us%40er:{PASSWORD}@{host}/v1"
    model = lw.get_model("openai/m", base_url=url, api_key=KEY, config=FAST)
    assert model.api.base_url == f"http://{host}/v1"  # type: ignore[attr-defined]
    await model.generate([lw.UserMessage(content="hi")])
    # what httpx makes of a URL's credentials, as it was
    expected = "Basic " + base64.b64encode(f"us@er:{PASSWORD}".encode()).decode()
    assert wire.requests[0].headers["authorization"] == expected
    assert wire.requests[0].path == "/v1/chat/completions"
    # an Authorization header of the caller's own wins
    own = lw.get_model(
        "openai/m", base_url=url, api_key=KEY, default_headers={"authorization": "Token t"}
    )
    await own.generate([lw.UserMessage(content="hi")])
    assert wire.requests[1].headers["authorization"] == "Token t"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {KEY} here", "key [redacted] here"),
        ("Incorrect API key provided: sk-abc123XYZ789.", "Incorrect API key provided: [redacted]."),
        ("Authorization: Bearer abcdef.123456-xyz", "Authorization: Bearer [redacted]"),
        ("auth was Basic dXNlcjpwYXNz", "auth was Basic [redacted]"),
        ("see https://bob:pw%21@example.com:8/x?y=1", "see https://[redacted]@example.com:8/x?y=1"),
        ('{"api_key": "abcdef123456"}', '{"api_key": "[redacted]"}'),
        ("x-api-key=abcdef123456&model=m", "x-api-key=[redacted]&model=m"),
        ("max_tokens: 4096 and tokens=128 are fine", "max_tokens: 4096 and tokens=128 are fine"),
        ("http://127.0.0.1:8000/v1 refused", "http://127.0.0.1:8000/v1 refused"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    from loopwright.model._redact import redact

    assert redact(text, [KEY, "not-needed", None]) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://u:p@h:1/v1", "http://h:1/v1"),
        ("https://token@api.example.com/v1", "https://api.example.com/v1"),
        ("http://u:p@[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    from loopwright.model._redact import redact_url

    assert redact_url(url) == expected


async def test_anthropic_keeps_url_credentials_and_echoed_keys_out_too(wire: WireServer) -> None:
    pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    from .wire_server import anthropic_error

    host = wire.url.removeprefix("http://")
    model = lw.get_model(
        "anthropic/claude-test",
        base_url=f"http://user:{PASSWORD}@{host}",
        api_key=KEY,
        config=lw.GenerateConfig(max_retries=0),
    )
    assert PASSWORD not in repr(model.api) and model.api.base_url == wire.url  # type: ignore[attr-defined]
    wire.push(Reply(anthropic_error("authentication_error", f"invalid x-api-key {KEY}"), 401))
    with pytest.raises(lw.ModelAPIError) as info:
        await model.generate([lw.UserMessage(content="hi")])
    assert "HTTP 401: invalid x-api-key [redacted]" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    expected = "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    assert wire.requests[0].headers["authorization"] == expected


def test_providers_declare_their_credentials_by_a_public_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ModelAPI.secrets()``: the key, the base URL's password (as written and decoded;
    its user is a name, not a secret) and the extra headers' values; none for a keyless
    server's placeholder."""
    pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    url = f"http://us%40er:{PASSWORD}@127.0.0.1:9/v1"
    headers = {"X-Org-Token": "org-token-77aa01"}
    openai = lw.get_model("openai/m", base_url=url, api_key=KEY, default_headers=headers)
    basic = "Basic " + base64.b64encode(f"us@er:{PASSWORD}".encode()).decode()
    assert set(openai.api.secrets()) == {
        KEY,
        PASSWORD,
        basic,
        *headers.values(),
    }
    anthropic = lw.get_model("anthropic/m", base_url=url, api_key=KEY, default_headers=headers)
    assert set(anthropic.api.secrets()) == set(openai.api.secrets())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = lw.get_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key=None)
    assert keyless.api.secrets() == ()  # "not-needed" is no secret
    assert lw.get_model("mock").api.secrets() == ()  # the default


async def test_an_echoed_header_credential_is_redacted_from_the_message(wire: WireServer) -> None:
    """A server that echoes a credential sent in an extra header (not the API key): the
    error message holds ``[redacted]`` instead."""
    token = "hdr-Credential-0f9e8d7c6b5a"
    wire.push(Reply(openai_error(f"token {token} has expired"), 401))
    model = lw.get_model(
        "openai/m",
        base_url=f"{wire.url}/v1",
        api_key=KEY,
        default_headers={"X-Auth": token},
        config=lw.GenerateConfig(max_retries=0),
    )
    with pytest.raises(lw.ModelAPIError) as info:
        await model.generate([lw.UserMessage(content="hi")])
    assert wire.requests[0].headers["x-auth"] == token  # it was sent
    assert "token [redacted] has expired" in str(info.value) and token not in str(info.value)


def test_error_summary_redacts_across_the_cut_and_keeps_a_tail() -> None:
    """A secret that a cut would halve is redacted whole first; ``tail`` keeps the end."""
    from loopwright.model._redact import error_summary

    text = "a" * 95 + KEY + "b" * 200 + "THE END"
    out = error_summary(text, [KEY], limit=100)
    assert KEY[:5] not in out and out.startswith("a" * 95 + "[reda\n")
    assert out.endswith(f"[{len(text) - 100:,} characters cut]\n")
    out = error_summary(text, [KEY], limit=100, tail=20)
    assert out.endswith("THE END") and KEY[:5] not in out
    assert error_summary(ValueError(f"bad {KEY}"), [KEY]) == "ValueError: bad [redacted]"


@pytest.mark.parametrize(
    ("url", "learnt"),
    [
        ("http://developer-bob:pw-0123456789@127.0.0.1:9/v1", ["pw-0123456789"]),
        ("http://developer-bob:pw%2F0123456789@h/v1", ["pw%2F0123456789", "pw/0123456789"]),
        ("https://ghp_token0123456789@h/v1", ["ghp_token0123456789"]),  # a token as the user
        ("https://ghp_token0123456789:@h/v1", ["ghp_token0123456789"]),  # an empty password
        ("http://h:1/v1", []),
        ("http://[::1/v1", []),  # not a URL
    ],
)
def test_a_url_teaches_its_secret_not_its_users_name(url: str, learnt: list[str]) -> None:
    """A user beside a password is a name: learnt, it was redacted wherever it appeared,
    e.g. the home folder in a tool file's path recorded for ``runs resume``, which then
    could not find the file."""
    from loopwright.model._redact import learn_secrets, redact_known, url_credentials

    assert url_credentials(url) == learnt
    model = lw.get_model("openai/m", base_url=url if "[" not in url else "http://h", api_key=None)
    learn_secrets(model.api.secrets())
    assert redact_known("/home/developer-bob/tools.py") == "/home/developer-bob/tools.py"
    for secret in learnt:
        assert secret not in redact_known(f"echo {secret}")


_GH = "ghp_R2d2C3poX9wing0123456789abcdEFGHij"  # (the shape of a GitHub token)
_HEX = "0123456789abcdef0123456789abcdef"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEF"


@pytest.mark.parametrize(
    ("url", "learnt"),
    [
        # a token given as the user, beside a fixed word as the password (GitHub's form)
        (f"https://{_GH}:x-oauth-basic@h/v1", ["x-oauth-basic", _GH]),
        (f"https://{_HEX}:x@h/v1", ["x", _HEX]),
        (f"https://{_GH.replace('_', '%5F')}:pw@h/v1", ["pw", _GH.replace("_", "%5F"), _GH]),
        (f"https://{_LETTERS}:pw-0123456789@h", ["pw-0123456789", _LETTERS]),
        # a name beside a token as the password (GitHub Actions', GitLab's forms)
        (f"https://x-access-token:{_GH}@h/v1", [_GH]),
        ("https://oauth2:glpat-0123456789abcdefGHIJ@h/v1", ["glpat-0123456789abcdefGHIJ"]),
        ("https://alice.smith%40example.com:pw-0123456789@h/v1", ["pw-0123456789"]),
        ("https://john.smith1987:pw-0123456789@h/v1", ["pw-0123456789"]),
        ("https://build-agent-7:pw-0123456789@h/v1", ["pw-0123456789"]),
    ],
)
def test_a_token_given_as_the_user_beside_a_password_is_learnt(url: str, learnt: list[str]) -> None:
    """The user beside a password is a name, unless it looks like a token: a stretch of
    16 or more letters and digits holding both, or of 32 or more (``TOKEN:x-oauth-basic``
    is how GitHub documents a token in a URL); names with a digit or two are not. What
    is learnt is redacted from the rows (a tool printing the URL)."""
    from loopwright.model._redact import learn_secrets, redact_known, url_credentials

    assert url_credentials(url) == learnt
    model = lw.get_model("openai/m", base_url=url, api_key=None)
    learn_secrets(model.api.secrets())
    user = url.partition("//")[2].partition(":")[0]
    shown = redact_known(f"origin {url.replace('/v1', '/repo.git')} (fetch)", plain=True)
    assert (user in shown) is (user not in learnt and user.replace("%5F", "_") not in learnt)
