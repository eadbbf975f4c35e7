"""Retry rules, Retry-After parsing and context-length detection shared by the SDK
providers (pure functions; the providers' own tests exercise them over real HTTP)."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from loopwright.model.providers._http_errors import (
    is_context_length_error,
    parse_retry_after,
    should_retry_status,
)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({}, None),
        (None, None),
        ({"retry-after": "-1"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "3600"}, 3600.0),  # kept: Model fails at once beyond max_retry_wait
        ({"retry-after": "inf"}, None),
        ({"retry-after": "whenever"}, None),
        ({"retry-after": ""}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"retry-after": when})
    assert value is not None and 25 <= value <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}) is None


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, None, True),
        (500, None, True),
        (502, None, True),
        (503, None, True),
        (529, None, True),
        (408, None, True),
        (409, None, True),
        (400, None, False),
        (401, None, False),
        (404, None, False),
        (422, None, False),
        (400, {"x-should-retry": "true"}, True),
        (503, {"x-should-retry": "false"}, False),
    ],
)
def test_should_retry_status(status: int, headers: dict[str, str] | None, expected: bool) -> None:
    assert should_retry_status(status, headers) is expected


class FakeResponse:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class StatusError(Exception):
    """Shaped like the SDKs' APIStatusError: status_code, response, body."""

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None):
        super().__init__(f"Error code: {status}")
        self.status_code = status
        self.body = body
        self.response = FakeResponse(headers or {})


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (400, {"error": {"message": "x", "code": "context_length_exceeded"}}, True),
        (400, {"error": {"message": "This model's maximum context length is 4096"}}, True),
        (400, {"error": {"message": "prompt is too long: 5 tokens > 4 maximum"}}, True),
        (400, {"message": "Requested tokens (9) exceed context window of 8"}, True),
        (413, {"error": {"message": "Input is too long for requested model."}}, True),
        (400, {"error": {"message": "temperature must be <= 2"}}, False),
        (429, {"error": {"message": "maximum context length is 4096"}}, False),
        (500, {"error": {"message": "context length"}}, False),
    ],
)
def test_context_length_detection(status: int, body: Any, expected: bool) -> None:
    assert is_context_length_error(StatusError(status, body)) is expected
