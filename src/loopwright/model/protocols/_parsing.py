"""Parsing helpers shared by the text protocols: JSON extraction and repair, tool names.

Model text is never evaluated: JSON is read with :func:`json.loads` and, when that fails,
with ``json_repair`` (single quotes, trailing commas, Python ``True``/``None``, missing
closing brackets...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .._chat import ToolInfo

__all__ = [
    "JsonFound",
    "Span",
    "answer_param",
    "find_json",
    "is_string_schema",
    "load_json",
    "norm_name",
    "required_params",
    "scan",
    "single_string_param",
    "strip_fences",
    "strip_think",
]

# a fence opens at the start of a line; ``` inside a JSON string is not one
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*[A-Za-z0-9_+.-]*[ \t]*\n?(.*?)(?:^[ \t]*```|```[ \t]*$|\Z)", re.S | re.M
)
_THINK = re.compile(r"^\s*<think>(.*?)(?:</think>|\Z)", re.S)
_MAX_CANDIDATES = 16
"""How many ``{`` positions are tried before giving up (bounds the work on long prose)."""


@dataclass(frozen=True, slots=True)
class Span:
    """Where a JSON value starts and ends in a text.

    ``closed`` is False when the text ends before the value does (truncated output).
    """

    start: int
    end: int
    closed: bool


def scan(text: str, start: int) -> Span:
    """Find the end of the JSON object or array starting at ``text[start]``.

    Brackets inside quoted strings (double or single quotes, with backslash escapes) do
    not count.
    """
    depth = 0
    quote = ""
    escape = False
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == quote:
                quote = ""
            continue
        if c == '"' or c == "'":
            quote = c
        elif c == "{" or c == "[":
            depth += 1
        elif c == "}" or c == "]":
            depth -= 1
            if depth <= 0:
                return Span(start, i + 1, True)
    return Span(start, len(text), False)


def strip_fences(text: str) -> str:
    """The content of the first ``` fenced block, or ``text`` stripped if there is none."""
    match = _FENCE.search(text)
    if match is None:
        return text.strip()
    return match.group(1).strip()


def strip_think(text: str) -> tuple[str, str | None]:
    """Split a leading ``<think>...</think>`` block (reasoning models) from ``text``."""
    match = _THINK.match(text)
    if match is None:
        return text, None
    return text[match.end() :], match.group(1).strip() or None


def load_json(text: str) -> Any:
    """Parse JSON, repairing near-JSON (``json_repair``) when strict parsing fails.

    Raises:
        ValueError: The text is not JSON and could not be repaired into any.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    import json_repair

    value = json_repair.loads(text)
    if value == "" and text.strip() not in ('""', "''"):
        raise ValueError("not JSON")
    return value


@dataclass(frozen=True, slots=True)
class JsonFound:
    """A JSON value found in a text, and where it was."""

    value: Any
    span: Span
    """Where it was, in the reply itself or in the inside of a code fence."""
    end_in_reply: int
    """Where the used part of the reply ends (for keeping only what was acted on)."""


def _starts(text: str) -> Iterator[tuple[str, int, int]]:
    """Candidate (source, start, offset-of-source-in-text) positions of a JSON object."""
    for match in _FENCE.finditer(text):
        body = match.group(1)
        i = body.find("{")
        if i >= 0:
            yield body, i, match.start(1)
    i = text.find("{")
    while i >= 0:
        yield text, i, 0
        i = text.find("{", i + 1)


def find_json(text: str, accept: Callable[[Any], bool]) -> JsonFound | None:
    """The first JSON object in ``text`` that ``accept`` takes, fences first, then bare.

    Prose around the object is ignored. When no candidate is accepted, the first one
    that parsed to an object is returned (the caller then says what it lacks).
    """
    fallback: JsonFound | None = None
    tried = 0
    seen: set[int] = set()
    for source, start, offset in _starts(text):
        if source is text and start in seen:
            continue
        tried += 1
        if tried > _MAX_CANDIDATES:
            break
        span = scan(source, start)
        if source is text:
            # objects nested in this one are not candidates of their own
            seen.update(i for i in range(start, span.end) if text[i] == "{")
        try:
            value = load_json(source[span.start : span.end])
        except ValueError:
            continue
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, dict)), None)
        if not isinstance(value, dict):
            continue
        end = offset + span.end
        if source is not text:
            # keep the closing fence with the object
            close = text.find("```", end)
            end = len(text) if close < 0 else close + 3
        found = JsonFound(value, span, end)
        if accept(value):
            return found
        if fallback is None:
            fallback = found
    return fallback


_NAME_JUNK = "`'\"*[](){}<>.,;: \t\r\n"


def norm_name(name: str) -> str:
    """A tool name as written by a model, normalised for matching.

    Brackets, quotes, backticks, markdown emphasis and a trailing ``()`` are removed,
    case is folded, spaces and hyphens become underscores: ``"[Web Search]"``,
    ``"`web-search`"`` and ``"web_search()"`` all give ``"web_search"``.
    """
    s = name.strip().strip(_NAME_JUNK).lower()
    if s.startswith("functions."):
        s = s[len("functions.") :]
    return re.sub(r"[\s\-]+", "_", s)


def is_string_schema(schema: Any) -> bool:
    """Whether a JSON schema accepts strings (``type: string``, or a union with one)."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(is_string_schema(s) for s in schema.get("anyOf", []) or [])


def _props(info: ToolInfo) -> dict[str, Any]:
    props = info.parameters.get("properties")
    return props if isinstance(props, dict) else {}


def _required(info: ToolInfo) -> list[str]:
    req = info.parameters.get("required")
    return [str(r) for r in req] if isinstance(req, list) else []


def single_string_param(info: ToolInfo) -> str | None:
    """The parameter plain-text input goes to, for tools that take one string.

    That is the only parameter, or the only required one, when it accepts strings.
    """
    props = _props(info)
    required = _required(info)
    if len(props) == 1:
        name = next(iter(props))
    elif len(required) == 1:
        name = required[0]
    else:
        return None
    return name if is_string_schema(props.get(name)) else None


def answer_param(info: ToolInfo) -> str:
    """The parameter of an answer tool (``submit``) that a final answer fills."""
    props = _props(info)
    if "answer" in props or not props:
        return "answer"
    if len(props) == 1:
        return next(iter(props))
    required = _required(info)
    return required[0] if required else next(iter(props))


def required_params(info: ToolInfo) -> list[str]:
    """The tool's required parameter names."""
    return _required(info)
