"""Secrets out of text before it becomes an error message, a log line or an event.

Providers redact at the source: the URL they show has no credentials
(:func:`redact_url`), and an error body from the server goes through :func:`redact`
with the provider's key before it becomes an exception message (servers echo the key
they were sent: "Incorrect API key provided: sk-..."). Everything downstream (the run
store, transcripts, logs, the terminal) then only ever sees the redacted text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["MASK", "redact", "redact_url", "split_credentials"]

MASK = "***"
"""What a secret is replaced with."""

_MIN_SECRET = 6  # shorter "secrets" (e.g. the placeholder of a keyless server) stay

# credentials in a URL: scheme://user:password@host
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI-style keys (sk-..., sk-proj-..., sk-ant-...)
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), "sk-" + MASK),
    # an Authorization header's value
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 " + MASK),
    # key=value / "api_key": "value" / x-api-key: value
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_\-]?key|access[_\-]?token|token|secret|password)"
            r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",&;}]{6,}"
        ),
        r"\1\2" + MASK,
    ),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with each of ``secrets`` (of 6 characters or more) and everything shaped
    like a secret (``sk-...`` keys, ``Bearer ...`` / ``Basic ...`` credentials,
    ``api_key=...``-style values, a URL's ``user:password@``) replaced by :data:`MASK`."""
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET and secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(r"\1" + MASK + "@", text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def split_credentials(url: str) -> tuple[str, str | None]:
    """``(url without user:password@, the HTTP Basic Authorization value they make)``;
    ``(url, None)`` when it holds none.

    HTTP clients (httpx) turn a URL's credentials into that ``Authorization`` header and
    log the URL as it is, so a provider sends the header itself and keeps the URL clean.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return url, None
    if parts.username is None and parts.password is None:
        return url, None
    netloc = host or ""
    if ":" in netloc:  # an IPv6 address
        netloc = f"[{netloc}]"
    if port is not None:
        netloc = f"{netloc}:{port}"
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    basic = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return urlunsplit(parts._replace(netloc=netloc)), basic


def redact_url(url: str) -> str:
    """``url`` without the credentials of its authority (``user:password@``); a URL that
    cannot be parsed goes through :func:`redact`."""
    clean, basic = split_credentials(url)
    if basic is None and "@" in url:  # unparseable, or odd: mask what looks secret
        return redact(url)
    return clean
