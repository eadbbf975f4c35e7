"""What a secret is, and how text is redacted: the one place for both.

It lives under ``model/`` because providers redact at the source and ``model/`` imports
neither ``transcript/`` nor ``log/``; those import it from here.

What is a secret:

- the credentials of a model: what :meth:`ModelAPI.secrets() <loopwright.ModelAPI.secrets>`
  returns (the openai and anthropic providers: the API key, the password of the base
  URL, and its user when it has none or looks like a token, the values of extra
  headers);
- the values under secret-named keys (``api_key``, ``access_token``, ``password``...)
  of a call's ``extra_body``;
- the values of environment variables named like one (``*_API_KEY``, ``*_TOKEN``,
  ``*_SECRET``, ``*_PASSWORD``...);
- in error text, anything shaped like one: ``sk-...`` keys, ``Bearer ...`` /
  ``Basic ...`` credentials, ``api_key=...``-style values, a URL's ``user:password@``.

Values shorter than :data:`MIN_LENGTH` characters are not secrets worth the name and
would redact ordinary words. Every secret becomes :data:`REDACTED`.

Two layers use this:

- **At the source.** A provider's error text goes through :func:`redact` with the
  provider's secrets before it becomes an exception message (servers echo the key they
  were sent: "Incorrect API key provided: sk-..."), the URLs it shows have no
  credentials (:func:`split_credentials`), and the error a model call or a run records
  goes through :func:`error_summary` (redacted and bounded), whatever the provider.
- **The last line.** Every secret learnt (:func:`learn_model_secrets` when a model is
  called while recording, :func:`learn_named_secrets`, :func:`learn_env_secrets`) is
  redacted by the run store's writer from every row (:func:`redact_known`), and so by
  the OpenTelemetry export and the approval digests, in every form it may take there:
  as it is and as JSON writes it (so the rows stay valid JSON), and encoded (base64 at
  any offset, hex and percent- or ``\\u``-escaped in any case: a tool that prints
  ``base64(key)``, a server echoing a ``Basic`` header), at a cost that does not grow
  with the number of secrets (``_secret_forms.py``). Only those values: the shapes
  are matched in error text alone, as a model's or tool's text may hold ``token=...``
  that is no secret, and the record must say what the model saw.

What a run records about how it was made (a command's options for ``runs resume``, an
eval's task parameters) is not recorded at all when it looks like a secret
(:func:`scrub_secrets`: values under secret-looking names at any depth, and the
credentials, query and fragment of URLs), so no length or exact value matters there.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from .._errors import error_text
from ._secret_forms import JSON, PLAIN, Forms, replace

if TYPE_CHECKING:
    from ._api import ModelAPI
    from ._model import Model

__all__ = [
    "MAX_ERROR",
    "MIN_LENGTH",
    "REDACTED",
    "credentials",
    "error_summary",
    "learn_call_secrets",
    "learn_env_secrets",
    "learn_model_secrets",
    "learn_named_secrets",
    "learn_secrets",
    "redact",
    "redact_known",
    "redact_known_rows",
    "redact_url",
    "scrub_secrets",
    "secret_name",
    "split_credentials",
    "url_credentials",
]

REDACTED = "[redacted]"
"""What a secret is replaced with, everywhere."""

MIN_LENGTH = 8
"""Shorter values are not redacted (the placeholder key of a keyless server, words)."""

MAX_ERROR = 16_000
"""The most characters of an error's text that a model call or a run records."""

_SECRET_NAME = re.compile(
    r"(API_?KEY|ACCESS_?KEY|SECRET(_?KEY)?|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|AUTHORIZATION)$",
    re.IGNORECASE,
)

# credentials in a URL: scheme://user:password@host
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]+@")
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI-style keys (sk-..., sk-proj-..., sk-ant-...)
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), REDACTED),
    # an Authorization header's value
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 " + REDACTED),
    # key=value / "api_key": "value" / x-api-key: value
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_\-]?key|access[_\-]?token|token|secret|password)"
            r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",&;}]{6,}"
        ),
        r"\1\2" + REDACTED,
    ),
)

# --- the secrets learnt: redacted from every run store row --------------------------------
_lock = threading.Lock()
# what is known, as given (a set, for the cheap "seen it" test of every model call); and
# their forms (plain, JSON, encoded: ``_secret_forms.py``); both are replaced whole under
# the lock, so readers take them without it
_known: frozenset[str] = frozenset()
_forms = Forms()
_env_done = False


def learn_secrets(values: Iterable[object]) -> None:
    """Redact each of ``values`` (the strings of :data:`MIN_LENGTH` characters or more)
    from every run store row written from now on, in every form it may take there
    (as it is, as JSON writes it, encoded: :mod:`~loopwright.model._secret_forms`).
    Cheap for values already known."""
    global _known, _forms
    new = [
        v
        for v in values
        if isinstance(v, str) and len(v) >= MIN_LENGTH and v not in _known  # (lock-free)
    ]
    if not new:
        return
    with _lock:
        new = list(dict.fromkeys(v for v in new if v not in _known))
        if not new:
            return
        _forms = _forms.adding(new)
        _known = _known | set(new)


def learn_model_secrets(api: ModelAPI) -> None:
    """Learn the credentials of a model (:meth:`ModelAPI.secrets`); called at each call
    made while recording (a known secret costs a set lookup), so a rotated key is
    learnt too."""
    learn_env_secrets()
    learn_secrets(api.secrets())


def learn_call_secrets(model: Model, extra_body: Mapping[str, Any] | None) -> None:
    """Learn what a call of ``model`` sends as credentials: its own and its fallbacks'
    (:func:`learn_model_secrets`) and the secret-named values of the call's
    ``extra_body``. The transcript's model hook calls it at each recorded call;
    ``loopwright run`` before it signs the options it records (``cli/_trust.py``)."""
    for m in (model, *model.fallbacks):
        learn_model_secrets(m.api)
    if extra_body:
        learn_named_secrets(extra_body)


def learn_named_secrets(data: object, depth: int = 0) -> None:
    """Learn the values under secret-named keys (``api_key``, ``token``, ``password``...)
    of a mapping, e.g. a model call's ``extra_body``, nested mappings included."""
    if not isinstance(data, Mapping) or depth > 8:
        return
    for key, value in data.items():
        named = isinstance(key, str) and (_SECRET_NAME.search(key) or secret_name(key))
        if named and isinstance(value, str):
            learn_secrets((value,))
        elif isinstance(value, Mapping):
            learn_named_secrets(value, depth + 1)


def learn_env_secrets() -> None:
    """Learn (once per process) the values of environment variables whose names say they
    hold a secret."""
    global _env_done
    if _env_done:
        return
    _env_done = True
    learn_secrets(v for k, v in os.environ.items() if _SECRET_NAME.search(k))


_SECRET_WORD = re.compile(
    r"key|token|secret|passw|pwd|auth|credential|cookie|header|session|signature",
    re.IGNORECASE,
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def _strip_url(match: re.Match[str]) -> str:
    url = match.group(0)
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:  # (not a URL after all: keep only its scheme)
        return url.partition("://")[0] + "://"


def scrub_secrets(value: Any, where: str = "", dropped: list[str] | None = None) -> Any:
    """``value`` without what looks like a secret: the values of names that look like one
    (at any depth), the credentials, query and fragment of URLs in strings; each thing
    left out is added to ``dropped`` by its path (``where.name``, ``where (URL)``)."""
    if dropped is None:
        dropped = []
    if isinstance(value, str):
        out = _URL.sub(_strip_url, value)
        if out != value:
            dropped.append(f"{where} (URL credentials or query)")
        return out
    if isinstance(value, dict):
        kept: dict[Any, Any] = {}
        for k, v in value.items():
            path = f"{where}.{k}" if where else str(k)
            if _SECRET_WORD.search(str(k)):
                dropped.append(path)
            else:
                kept[k] = scrub_secrets(v, path, dropped)
        return kept
    if isinstance(value, (list, tuple)):
        return [scrub_secrets(v, f"{where}[{i}]", dropped) for i, v in enumerate(value)]
    return value


def secret_name(name: str) -> bool:
    """Whether a setting named ``name`` looks like it holds a secret (a key, token,
    password, header, cookie, credential...): broader than the names whose values the
    run store learns to redact, as it decides what is not recorded at all."""
    return _SECRET_WORD.search(name) is not None


def redact_known(text: str, *, plain: bool = False) -> str:
    """``text`` (JSON, or ``plain`` text) with every secret learnt replaced by
    :data:`REDACTED`, in every form it may take (:mod:`~loopwright.model._secret_forms`:
    as it is, base64, hex, percent- and ``\\u``-escaped); ``text`` itself when none
    occurs. In JSON the forms are looked for as JSON writes them, so the text stays valid
    JSON; in plain text, both ways (a row's plain text column may hold JSON). The cost is
    a pass or three over ``text``'s bytes whatever the number of secrets."""
    forms = _forms
    return replace(text, ((forms, JSON | PLAIN if plain else JSON),), REDACTED) if forms else text


def redact_known_rows(texts: list[str]) -> list[str] | None:
    """Each of ``texts`` (JSON) as :func:`redact_known` makes it, or ``None`` when none
    changes: the rows of a batch are looked at in one pass (one gate over them all,
    ``_secret_forms.py``), then only if a form may be in one, each row."""
    forms = _forms
    if not forms or not texts:
        return None
    # (a form in a row is in the rows joined: the gate over them all misses none)
    if not forms.candidates("\0".join(texts), JSON):
        return None
    return [replace(t, ((forms, JSON),), REDACTED) for t in texts]


# --- error text ------------------------------------------------------------------------------
def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with each of ``secrets`` and of the secrets learnt (of :data:`MIN_LENGTH`
    characters or more) and everything shaped like a secret (``sk-...`` keys,
    ``Bearer ...`` / ``Basic ...`` credentials, ``api_key=...``-style values, a URL's
    ``user:password@``) replaced by :data:`REDACTED`; the secrets in every form they may
    take (encoded too: :mod:`~loopwright.model._secret_forms`). For error text, not for
    a model's or a tool's (see the module documentation)."""
    learn_env_secrets()
    # (the secrets given that were not learnt: a model that is not recorded)
    given = tuple(sorted({s for s in secrets if s and len(s) >= MIN_LENGTH} - _known))
    found = [(_forms, PLAIN | JSON), *([(_given_forms(given), PLAIN | JSON)] if given else [])]
    text = replace(text, found, REDACTED)
    text = _USERINFO.sub(r"\1" + REDACTED + "@", text)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


@functools.lru_cache(maxsize=16)
def _given_forms(secrets: tuple[str, ...]) -> Forms:
    return Forms().adding(secrets)


def error_summary(
    error: BaseException | str,
    secrets: Iterable[str | None] = (),
    limit: int = MAX_ERROR,
    *,
    tail: int = 0,
) -> str:
    """An error as a model call or a run records it: ``Type: message``
    (:func:`~loopwright._errors.error_text`; a text is taken as it is), redacted
    (:func:`redact`) and cut to about ``limit`` characters: the first ``limit - tail``
    and the last ``tail`` (a traceback's last lines say what failed)."""
    text = error if isinstance(error, str) else error_text(error)
    if len(text) <= limit:
        return redact(text, secrets)
    # each end is redacted before it is cut, so a secret across a cut goes whole; the
    # middle is never read
    head = redact(text[: limit - tail + _SLACK], secrets)[: limit - tail]
    end = redact(text[-(tail + _SLACK) :], secrets)[-tail:] if tail else ""
    return f"{head}\n[{len(text) - limit:,} characters cut]\n{end}"


_SLACK = 4096  # characters redacted beyond a cut: more than any secret


# --- URLs --------------------------------------------------------------------------------------
def url_credentials(url: str) -> list[str]:
    """The secrets of ``url``'s authority, as written and percent-decoded: its password,
    and its user when it has no password (a token is often given as the user:
    ``https://TOKEN@host``) or looks like a token (:func:`_token_like`: GitHub's
    ``https://TOKEN:x-oauth-basic@host``). Another user beside a password is a name, not
    a secret: learnt, it would redact that name wherever it appears (a home folder in a
    tool's path, which a resumed run then could not find)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    user, password = parts.username, parts.password
    values = [password] if password else []
    if user and (not password or _token_like(unquote(user))):
        values.append(user)
    return [*values, *(unquote(v) for v in values if unquote(v) != v)]


_RUN = re.compile(r"[A-Za-z0-9]{16,}")


def _token_like(user: str) -> bool:
    """Whether a URL's user looks like a generated credential, not a name: it holds a
    stretch of 16 or more letters and digits with both in it, or of 32 or more.
    Generated tokens (hex, base62, with a prefix such as ``ghp_`` or ``glpat-``) are such
    stretches; a name's words are shorter, its digits few (``john.smith1987``,
    ``build-agent-7``, ``x-access-token``). A name taken for a token is only redacted
    where it appears; a token taken for a name would be written to the run store."""
    return any(
        len(run) >= 32 or (not run.isdigit() and not run.isalpha()) for run in _RUN.findall(user)
    )


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


def credentials(api_key: str | None, url: str, headers: Mapping[str, str] | None) -> Sequence[str]:
    """What an HTTP provider's :meth:`~loopwright.ModelAPI.secrets` returns: its key,
    the secret of its base URL (:func:`url_credentials`), the values of its extra
    headers."""
    values = [api_key, *url_credentials(url), *(headers or {}).values()]
    return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))
