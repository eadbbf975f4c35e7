"""Retries say so, and a server on this machine that refuses the connection is given up on
soon: the openai provider against 127.0.0.1 (a real server, or a port nobody listens on)."""

from __future__ import annotations

import logging
import socket
import time
from types import SimpleNamespace

import pytest

import loopwright as lw
from loopwright.model._api import LOCAL_REFUSED_RETRIES, refused_on_this_machine

from .wire_server import Reply, WireServer, openai_error, openai_reply

pytest.importorskip("openai", reason="the openai SDK is not installed (loopwright[openai])")

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]


def free_port() -> int:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def retry_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "loopwright.model" and r.levelno == logging.WARNING
    ]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_refused_local_connection_is_tried_twice_and_said(
    host: str, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    model = lw.get_model("openai/x", base_url=f"http://{host}:{port}/v1")  # default retries
    start = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(lw.ModelAPIError) as info:
        await model.generate(HI)
    assert time.monotonic() - start < 5  # not ~25 s of backoff: one retry of ~1 s
    assert f"{host}:{port}" in str(info.value) and "connection refused" in str(info.value)
    assert "is the server running?" in str(info.value)
    assert f"gave up after {LOCAL_REFUSED_RETRIES + 1} attempts" in " ".join(info.value.__notes__)
    [warning] = retry_warnings(caplog)
    assert warning.startswith("openai/x failed (ModelAPIError: ")
    assert "connection refused" in warning
    assert f"retry 1 of {LOCAL_REFUSED_RETRIES} in " in warning and warning.endswith(" s")


async def test_each_retry_is_logged_with_its_reason_and_wait(
    wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    wire.push(
        Reply(openai_error("overloaded", kind="server_error"), 503),
        Reply(
            openai_error("Rate limit reached", kind="rate_limit_error"), 429, {"retry-after": "0.1"}
        ),
        openai_reply("ok"),
    )
    model = lw.get_model(
        "openai/x",
        base_url=wire.url + "/v1",
        api_key="sk-t",
        config=lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.2, max_retries=3),
    )
    with caplog.at_level(logging.WARNING):
        assert (await model.generate(HI)).text == "ok"
    first, second = retry_warnings(caplog)
    assert "HTTP 503: overloaded" in first and "retry 1 of 3 in 0.0 s" in first
    assert "HTTP 429: Rate limit reached" in second and "retry 2 of 3 in 0.1 s" in second


def _chain(host: str, refused: bool = True) -> BaseException:
    """An error raised from a connection error of a request to ``host``, as httpx
    raises them."""
    top = lw.ModelAPIError("connection failed", retryable=True)
    connect = OSError("All connection attempts failed")
    connect.request = SimpleNamespace(url=f"http://{host}:8000/v1/chat")  # type: ignore[attr-defined]
    top.__cause__ = connect
    connect.__context__ = ConnectionRefusedError(111, "refused") if refused else TimeoutError()
    return top


@pytest.mark.parametrize(
    ("host", "refused", "expected"),
    [
        ("127.0.0.1", True, True),
        ("127.5.0.1", True, True),
        ("localhost", True, True),
        ("api.localhost", True, True),
        ("[::1]", True, True),
        ("0.0.0.0", True, True),
        ("10.1.2.3", True, False),
        ("api.openai.com", True, False),
        ("127.0.0.1", False, False),
    ],
)
def test_refused_on_this_machine(host: str, refused: bool, expected: bool) -> None:
    assert refused_on_this_machine(_chain(host, refused)) is expected


async def test_a_refused_remote_connection_keeps_the_configured_retries() -> None:
    api = lw.get_model("openai/x", base_url="http://10.1.2.3:1/v1").api
    decision = api.classify_error(_chain("10.1.2.3"))
    assert decision.retry and decision.max_retries is None
    decision = api.classify_error(_chain("127.0.0.1"))
    assert decision.retry and decision.max_retries == LOCAL_REFUSED_RETRIES
