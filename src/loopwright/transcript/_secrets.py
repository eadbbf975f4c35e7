"""The secrets the run store must never hold, and their redaction.

Providers redact credentials in their own error text; this is the last line: every row
the run store writes (events, messages, a run's input, output and error) has each known
secret replaced by ``[redacted]`` first, wherever it came from — an error body echoing
the key, a tool printing the environment, a password in a ``base_url``.

Known secrets are the credentials of every model called while recording (its API key,
the password in its base URL, the values of its extra headers), found when the model is
first called, the values under secret-looking keys of a call's ``extra_body``, and the
values of environment variables whose names say they hold one
(``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``...). Values shorter than 8
characters are not secrets worth the name and would redact ordinary words.
"""

from __future__ import annotations

import json
import os
import re
import threading
import weakref
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = [
    "REDACTED",
    "add_env_secrets",
    "add_model_secrets",
    "add_named_secrets",
    "add_secret",
    "redact",
]

REDACTED = "[redacted]"
MIN_LENGTH = 8

_SECRET_NAME = re.compile(
    r"(API_?KEY|ACCESS_?KEY|SECRET(_?KEY)?|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|AUTHORIZATION)$",
    re.IGNORECASE,
)

_lock = threading.Lock()
# the secrets as they appear inside JSON text, and as they are (for plain text); each is
# replaced whole, so readers take it without the lock; longest first, so that a secret
# containing another is replaced whole
_json_forms: tuple[str, ...] = ()
_plain_forms: tuple[str, ...] = ()
_seen: weakref.WeakSet[object] = weakref.WeakSet()
_env_done = False


def add_secret(value: object) -> None:
    """Redact ``value`` (a string of 8 characters or more) from every row written from now
    on, as it is and as it appears inside JSON text."""
    global _json_forms, _plain_forms
    if not isinstance(value, str) or len(value) < MIN_LENGTH:
        return
    forms = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    with _lock:
        if value not in _plain_forms:
            _plain_forms = tuple(sorted({*_plain_forms, value}, key=len, reverse=True))
        if not forms <= set(_json_forms):
            _json_forms = tuple(sorted({*_json_forms, *forms}, key=len, reverse=True))


def _add_all(values: Iterable[object]) -> None:
    for value in values:
        add_secret(value)


def add_model_secrets(api: object) -> None:
    """Learn the credentials of a provider's API object, once per object: its API key,
    the password in its base URL and the values of its extra headers."""
    try:
        if api in _seen:
            return
        _seen.add(api)
    except TypeError:  # not weakly referenceable (or unhashable): look every time
        pass
    add_env_secrets()
    values: list[object] = [getattr(api, name, None) for name in ("api_key", "_api_key")]
    url = getattr(api, "base_url", None)
    if isinstance(url, str):
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            values += [password, unquote(password)]
    for name in ("headers", "_headers"):
        headers = getattr(api, name, None)
        if isinstance(headers, dict):
            values += list(headers.values())
    _add_all(values)


def add_named_secrets(data: object, depth: int = 0) -> None:
    """Learn the values under secret-looking keys (``api_key``, ``token``, ``password``...)
    of a mapping, e.g. a model call's ``extra_body``, nested mappings included."""
    if not isinstance(data, dict) or depth > 8:
        return
    for key, value in data.items():
        if isinstance(key, str) and _SECRET_NAME.search(key) and isinstance(value, str):
            add_secret(value)
        elif isinstance(value, dict):
            add_named_secrets(value, depth + 1)


def add_env_secrets() -> None:
    """Learn (once per process) the values of environment variables whose names say they
    hold a secret."""
    global _env_done
    if _env_done:
        return
    _env_done = True
    _add_all(v for k, v in os.environ.items() if _SECRET_NAME.search(k))


def redact(text: str, *, plain: bool = False) -> str:
    """``text`` (JSON, or ``plain`` text) with every known secret replaced by
    ``[redacted]``: linear in its size for each secret; nothing is copied when none
    occurs. In JSON the secrets are looked for as JSON writes them, so the text stays
    valid JSON."""
    for secret in _plain_forms if plain else _json_forms:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
