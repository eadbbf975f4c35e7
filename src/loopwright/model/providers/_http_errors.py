"""What the HTTP providers share about failures: retry rules, Retry-After, context length.

Both SDKs (``openai``, ``anthropic``) raise ``APIStatusError`` (with ``status_code`` and
the ``response``) for HTTP errors and ``APIConnectionError`` / ``APITimeoutError`` when
no usable response came back. The helpers here read those by duck typing, so they work
across SDK versions without importing either SDK.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..._errors import LoopwrightError, ModelAPIError, ModelTimeoutError
from .._api import refused_on_this_machine
from .._chat import AssistantMessage
from .._output import ModelOutput
from .._redact import redact, redact_url
from ._http_bounds import too_large

__all__ = [
    "MALFORMED",
    "RETRYABLE_STATUS",
    "error_message",
    "failure_cause",
    "is_context_length_error",
    "malformed_reply",
    "model_length_output",
    "parse_retry_after",
    "reply_start",
    "says_invalid_request",
    "sdk_failure",
    "should_retry_status",
    "status_error",
    "transient_stream_error",
    "unreadable_body",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth retrying: timeouts, conflicts, rate limits, overload, server errors."""

_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|"
    r"context length|exceed(?:s|ed)? context limit|prompt is too long|"
    r"input is too long|too many input tokens|reduce the length of the (?:messages|prompt)",
    re.IGNORECASE,
)


# a server error whose body says the request itself is wrong: sending it again won't help
_INVALID_REQUEST = re.compile(
    r"invalid[_ ]?request|validation|unprocessable|bad[_ ]?request|malformed request",
    re.IGNORECASE,
)


# the type or code of an error a stream sent after its 200: worth another attempt
_TRANSIENT = re.compile(
    r"overloaded|rate[_ ]?limit|server[_ ]?error|^api_error$|timeout|unavailable", re.IGNORECASE
)


def transient_stream_error(error: BaseException) -> bool:
    """Whether an error a stream sent after its 200 (an ``error`` event) says it is
    transient: overloaded, rate limited, a server error (by its type or code)."""
    return bool(_TRANSIENT.search(_error_code(error)))


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date).

    Returns None when absent, unparseable, negative or infinite. A long wait is kept as
    asked: ``Model`` honours it within ``GenerateConfig.max_retry_wait`` and fails the
    call at once beyond it (:mod:`loopwright.model._retry`).
    """
    if not headers:
        return None
    value: float | None = None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
        except ValueError:
            value = None
    if value is None:
        raw = headers.get("retry-after")
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                return None
            value = parsed.timestamp() - time.time()
    if not math.isfinite(value) or value < 0:
        return None
    return value


def should_retry_status(status: int, headers: Mapping[str, str] | None) -> bool:
    """Whether an HTTP error status is worth retrying.

    An ``x-should-retry: true|false`` header from the server decides when present;
    otherwise timeouts, conflicts, rate limits and 5xx retry and other 4xx do not.
    """
    hint = (headers or {}).get("x-should-retry")
    if hint == "true":
        return True
    if hint == "false":
        return False
    return status in RETRYABLE_STATUS or status >= 500


def _headers(error: BaseException) -> Mapping[str, str] | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def error_message(error: BaseException) -> str:
    """The provider's own message from an SDK error body, else ``str(error)``."""
    body: Any = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():  # the SDK unwraps {"error": "text"}
        return body
    message = getattr(error, "message", None)
    return message if isinstance(message, str) and message else str(error)


def _error_code(error: BaseException) -> str:
    code = getattr(error, "code", None)
    if isinstance(code, str):
        return code
    body: Any = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            for key in ("code", "type"):
                if isinstance(inner.get(key), str):
                    return str(inner[key])
    return ""


def is_context_length_error(error: BaseException) -> bool:
    """Whether an HTTP 400 error says the conversation does not fit the context window."""
    if getattr(error, "status_code", None) not in (400, 413, 422):
        return False
    if _error_code(error) == "context_length_exceeded":
        return True
    return bool(_CONTEXT_LENGTH.search(error_message(error)))


def says_invalid_request(error: BaseException) -> bool:
    """Whether an error body's type, code or message says the request was invalid
    (``invalid_request_error``, a validation error...)."""
    return bool(
        _INVALID_REQUEST.search(_error_code(error))
        or _INVALID_REQUEST.search(error_message(error)[:2000])
    )


def status_error(
    model: str, error: BaseException, *, key_env: str | None, secrets: Sequence[str] = ()
) -> ModelAPIError:
    """A :class:`ModelAPIError` for an SDK ``APIStatusError``, classified for retries:
    as :func:`should_retry_status` says, except that a 5xx whose body says the request
    is invalid (:func:`says_invalid_request`) is not retried unless the server's
    ``x-should-retry`` header asks for it."""
    status = int(getattr(error, "status_code", 0) or 0)
    headers = _headers(error)
    in_stream = 200 <= status < 300  # an error event of a stream, after its 200
    retry = transient_stream_error(error) if in_stream else should_retry_status(status, headers)
    invalid = (
        retry
        and status >= 500
        and (headers or {}).get("x-should-retry") is None
        and says_invalid_request(error)
    )
    retry = retry and not invalid
    retry_after = parse_retry_after(headers) if retry else None
    detail = _shown(error_message(error), secrets)
    location = (headers or {}).get("location")
    if in_stream:
        kind = _error_code(error) or "an error"
        hint = f"{kind} sent in the stream; {'retried' if retry else 'it is not retried'}"
    elif 300 <= status < 400:
        where = f" to {_shown(redact_url(location), secrets)}" if location else ""
        hint = (
            f"the server redirects{where}; redirects are not followed, as they would "
            "carry the request's headers and the conversation elsewhere: set base_url to "
            "where it points, if you trust it"
        )
    elif status in (401, 403):
        hint = f"check the API key{f' (${key_env})' if key_env else ''} and its permissions"
    elif status == 404:
        hint = "check the model name and the base URL"
    elif invalid:
        hint = "the provider says the request is invalid; it is not retried"
    elif status == 429:
        hint = "rate limited; retried after the wait the provider asked for, within max_retry_wait"
    elif retry:
        hint = "a transient server error; retried"
    else:
        hint = "the provider rejected the request; it is not retried"
    return ModelAPIError(
        f"{model}: HTTP {status}: {detail} ({hint})",
        retryable=retry,
        retry_after=retry_after,
        status_code=status or None,
    )


_MAX_DETAIL = 1000  # characters of a server's error text kept in a message


def _shown(text: str, secrets: Sequence[str]) -> str:
    """A server's error text as a message shows it: secrets redacted, bounded."""
    text = redact(text, secrets)
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


MALFORMED = (AttributeError, TypeError, KeyError, ValueError, IndexError, AssertionError)
"""What reading a reply of the wrong shape raises, in a converter or in an SDK's stream
accumulator (a field missing or of the wrong type, a block index out of range, an event
before the message began): :func:`malformed_reply`, never the exception itself."""


def malformed_reply(
    model: str, response: Any, error: Exception, secrets: Sequence[str] = ()
) -> ModelAPIError:
    """The error for a reply the provider's converter could not read (a field missing,
    null or of the wrong type): retryable, naming the model and what was wrong (and how
    ``response`` began, unless it is None), ``secrets`` redacted (a server that echoes
    the request, headers and all, answers 200)."""
    began = "" if response is None else f"; the reply began {reply_start(response, secrets)}"
    what = _shown(f"{type(error).__name__}: {error}", secrets)
    return ModelAPIError(f"{model}: malformed response ({what}){began}", retryable=True)


def reply_start(response: Any, secrets: Sequence[str], length: int = 200) -> str:
    """How a reply begins, for an error message: its first ``length`` characters,
    redacted before they are cut (a secret across the cut goes whole, not half)."""
    return redact(str(response)[: length + 4096], secrets)[:length]


def unreadable_body(model: str, error: BaseException) -> ModelAPIError | None:
    """The error for a response body that could not be decoded (not JSON, not UTF-8, or
    nested too deeply to parse): retryable, naming the model. None for other errors."""
    if isinstance(error, RecursionError):
        what = "it is nested too deeply to parse"
    elif isinstance(error, json.JSONDecodeError):
        what = f"it is not valid JSON: {error.msg} at character {error.pos}"
    elif isinstance(error, UnicodeDecodeError):
        what = f"it is not valid {error.encoding} at byte {error.start}"
    else:
        return None
    return ModelAPIError(f"{model}: the response body could not be read ({what})", retryable=True)


def model_length_output(model: str, detail: str) -> ModelOutput:
    """The output for a context-length error: ``stop_reason="model_length"``, no text."""
    return ModelOutput(
        message=AssistantMessage(model=model),
        stop_reason="model_length",
        model=model,
        error=f"the conversation does not fit the model's context window: {detail}",
    )


def failure_cause(sdk: Any, error: BaseException) -> BaseException | None:
    """What a translated SDK error is raised from: the SDK's error when no server text is
    in it (connection failures: their chain tells a refused connection apart), else
    None, so a traceback does not repeat a body that may hold secrets."""
    return None if isinstance(error, sdk.APIStatusError) else error


def sdk_failure(
    sdk: Any,
    error: BaseException,
    *,
    model: str,
    base_url: str,
    key_env: str | None,
    timeout: float | None,
    secrets: Sequence[str] = (),
) -> ModelOutput | LoopwrightError | None:
    """Translate an exception of an ``openai``/``anthropic`` SDK call.

    ``base_url`` is shown as given (pass it without credentials); the server's text is
    redacted (the model's ``secrets`` and anything shaped like a secret) and bounded.

    Returns a ``model_length`` output for a context-length error, a loopwright error
    (classified for retries) for every other SDK error and for a body the SDK could not
    decode (:func:`unreadable_body`), and None for anything else.
    """
    big = too_large(error)
    if big is not None:
        return ModelAPIError(f"{model}: {big}", retryable=False)
    unreadable = unreadable_body(model, error)
    if unreadable is not None:
        return unreadable
    if isinstance(error, sdk.APITimeoutError):
        limit = f"{timeout:g}s" if timeout else "the SDK's default timeout"
        return ModelTimeoutError(
            f"{model} did not answer within {limit}; raise GenerateConfig.timeout or check "
            f"{base_url}"
        )
    if isinstance(error, sdk.APIConnectionError):
        if refused_on_this_machine(error):
            return ModelAPIError(
                f"{model}: nothing answers at {base_url} (connection refused); is the "
                "server running?",
                retryable=True,
            )
        cause = error.__cause__ or error.__context__
        reason = _shown(f"{error_message(error)}{f': {cause}' if cause else ''}", secrets)
        return ModelAPIError(
            f"{model}: the connection to {base_url} failed ({reason}); retried. Check that "
            "the server is up",
            retryable=True,
        )
    if isinstance(error, sdk.APIStatusError):
        if is_context_length_error(error):
            return model_length_output(model, _shown(error_message(error), secrets))
        return status_error(model, error, key_env=key_env, secrets=secrets)
    if isinstance(error, sdk.APIError):  # e.g. an error event in a stream (openai's)
        return ModelAPIError(
            f"{model}: {_shown(error_message(error), secrets)}",
            retryable=transient_stream_error(error),
        )
    return None


def stream_broke(
    model: str, error: BaseException, secrets: Sequence[str] = ()
) -> ModelAPIError | None:
    """A retryable error for a stream whose connection broke while it was read (an
    ``httpx``-style ``TransportError``: the SDKs raise it as it is mid-stream, and the
    SDKs do not all use the same ``httpx``); None for any other error."""
    if not any(c.__name__ == "TransportError" for c in type(error).__mro__):
        return None
    return ModelAPIError(
        f"{model}: the stream broke ({_shown(error_message(error), secrets)})", retryable=True
    )
