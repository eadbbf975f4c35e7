"""Parsing helpers shared by the text protocols: JSON extraction and repair, tool names.

Model text is never evaluated: JSON is read with :func:`json.loads` and, when that fails,
with ``json_repair`` (single quotes, trailing commas, Python ``True``/``None``, missing
closing brackets...). Values nested deeper than the bound on tool-call arguments
(:data:`loopwright._nesting.MAX_NESTING`) are refused, without recursion.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..._nesting import MAX_NESTING, nesting_exceeds
from .._chat import ToolInfo

__all__ = [
    "MAX_REPAIR",
    "MAX_SCAN_STEPS",
    "NAME_JUNK",
    "TOO_DEEP",
    "JsonFound",
    "JsonRead",
    "RepairBudget",
    "Span",
    "answer_param",
    "find_json",
    "is_string_schema",
    "load_json",
    "norm_name",
    "read_json",
    "required_params",
    "scan",
    "single_string_param",
    "strip_fences",
    "strip_think",
]

# a fence opens at the start of a line; ``` inside a JSON string is not one
_FENCE = re.compile(
    r"^[ \t]*+```[ \t]*+[A-Za-z0-9_+.-]*+[ \t]*+\n?(.*?)(?:^[ \t]*```|```[ \t]*$|\Z)",
    re.S | re.M,
)
_THINK = re.compile(r"^\s*+<think>(.*?)(?:</think>|\Z)", re.S)
_MAX_CANDIDATES = 16
"""How many ``{`` positions are tried before giving up (bounds the work on long prose)."""
MAX_REPAIR = 32_000
"""The most characters of near-JSON handed to ``json_repair`` per reply: its time grows
faster than linearly on some inputs, and all parsing runs on the event loop."""
MAX_SCAN_STEPS = 2 * MAX_REPAIR
"""The most brackets a scan of near-JSON steps over (one step of Python each)."""

# What a scan skips at C speed: text without brackets or quotes, whole quoted strings
# (with backslash escapes), and bracketed groups up to a few levels deep (any closing
# bracket closes any opening one, as the scan counts them). Possessive quantifiers never
# backtrack: matching is linear. Only brackets nested deeper than that cost a step of
# Python each.
_ATOM = (
    r"""[^"'{}\[\]]++"""
    r'|"(?:[^"\\]++|\\.)*+"'
    r"|'(?:[^'\\]++|\\.)*+'"
)
_GROUP = rf"[{{\[](?:{_ATOM})*+[}}\]]"
for _ in range(7):
    _GROUP = rf"[{{\[](?:{_ATOM}|{_GROUP})*+[}}\]]"
_SKIP = rf"(?:{_ATOM}|{_GROUP})*+"
_NEXT = re.compile(_SKIP + r"(.|\Z)", re.S)
"""Skip what does not change the depth; group 1 is the next bracket or quote (a quote
here opens a string that never closes), or empty at the end of the text."""
_OPEN = re.compile(r"[{\[]")


@dataclass(frozen=True, slots=True)
class Span:
    """Where a JSON value starts and ends in a text.

    ``closed`` is False when the text ends before the value does (truncated output), or
    when the value nests deeper than ``MAX_NESTING`` levels (``deep``) or has too many brackets
    to be worth reading (``long``): the scan stops there.
    """

    start: int
    end: int
    closed: bool
    deep: bool = False
    long: bool = False
    """The scan gave up after :data:`MAX_SCAN_STEPS` brackets (``closed`` is False)."""


def scan(
    text: str, start: int, max_depth: int = MAX_NESTING, max_steps: int = MAX_SCAN_STEPS
) -> Span:
    """Find the end of the JSON object or array starting at ``text[start]``.

    ``text[start]`` must be ``{`` or ``[``. Brackets inside quoted strings (double or
    single quotes, with backslash escapes) do not count. Linear: a regular expression
    jumps over strings and shallow bracket groups to the next bracket or quote; a value
    nested deeper than ``max_depth``, or with more than ``max_steps`` brackets left over,
    ends the scan (strict JSON of any size is read by :func:`read_json` in C instead;
    near-JSON that long could not be repaired anyway).
    """
    if text[start : start + 1] not in ("{", "["):
        raise ValueError(f"scan: no bracket at {start}")
    depth = 1
    i = start + 1
    step = _NEXT.match
    for _ in range(max_steps):
        m = step(text, i)
        assert m is not None  # the pattern matches anywhere, if only the empty string
        c = m.group(1)
        i = m.end()
        if c == "{" or c == "[":
            depth += 1
            if depth > max_depth:
                return Span(start, i, False, deep=True)
        elif c == "}" or c == "]":
            depth -= 1
            if depth <= 0:
                return Span(start, i, True)
        else:  # the end, or a string that never closes
            return Span(start, len(text), False)
    return Span(start, i, False, long=True)


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


@dataclass(slots=True)
class RepairBudget:
    """How many more characters ``json_repair`` may be given (shared by one reply's
    attempts)."""

    left: int = MAX_REPAIR


TOO_DEEP = f"it nests objects or lists more than {MAX_NESTING} levels deep"


def load_json(text: str, budget: RepairBudget | None = None, depth: int = MAX_NESTING) -> Any:
    """Parse JSON, repairing near-JSON (``json_repair``) when strict parsing fails.

    Control characters inside strings (raw newlines) are accepted. Repair is tried only
    within ``budget`` (default: :data:`MAX_REPAIR` characters), and values nested deeper
    than ``depth`` levels (default ``MAX_NESTING``, 100) are refused, so the time is
    bounded and the value can be stored.

    Raises:
        ValueError: The text is not JSON and could not be repaired into any; the message
            says why, for the model.
    """
    try:
        value = json.loads(text, strict=False)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except ValueError:
        pass
    else:
        if nesting_exceeds(value, depth):
            raise ValueError(TOO_DEEP)
        return value
    budget = budget if budget is not None else RepairBudget()
    if len(text) > budget.left:
        raise ValueError(
            f"it is not valid JSON, and at {len(text):,} characters too long to be repaired"
        )
    if _deeper_than(text, depth):
        raise ValueError(TOO_DEEP)
    budget.left -= len(text)
    import json_repair

    try:
        value = json_repair.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("it is not valid JSON") from None
    if value == "" and text.strip() not in ('""', "''"):
        raise ValueError("it is not valid JSON")
    if nesting_exceeds(value, depth):
        raise ValueError(TOO_DEEP)
    return value


def _deeper_than(text: str, limit: int) -> bool:
    """Whether any bracketed value in ``text`` nests more than ``limit`` levels deep
    (one linear pass: each value is scanned from where the previous one ended)."""
    i = 0
    n = len(text)
    while i < n:
        m = _OPEN.search(text, i)
        if m is None:
            return False
        span = scan(text, m.start(), limit)
        if span.deep:
            return True
        i = span.end
    return False


_DECODER = json.JSONDecoder(strict=False)
_TOO_LONG = "it is not valid JSON, and too long to be repaired"


@dataclass(frozen=True, slots=True)
class JsonRead:
    """The JSON value at a place in a text: its span and value, or why there is none."""

    span: Span
    value: Any = None
    error: str | None = None


def read_json(
    text: str, start: int, budget: RepairBudget | None = None, depth: int = MAX_NESTING
) -> JsonRead:
    """The JSON value starting at ``text[start]`` (``{`` or ``[``) and where it ends.

    Strict JSON is read in C, whatever its size; otherwise the value is found with
    :func:`scan` and near-JSON repaired by :func:`load_json` (within ``budget``). Values
    nested deeper than ``depth`` levels are refused.
    """
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        return JsonRead(Span(start, len(text), False, deep=True), error=TOO_DEEP)
    except ValueError:
        pass
    else:
        if nesting_exceeds(value, depth):
            return JsonRead(Span(start, end, True, deep=True), error=TOO_DEEP)
        return JsonRead(Span(start, end, True), value)
    span = scan(text, start, depth)
    if span.deep or span.long:
        return JsonRead(span, error=TOO_DEEP if span.deep else _TOO_LONG)
    try:
        return JsonRead(span, load_json(text[span.start : span.end], budget, depth))
    except ValueError as ex:
        return JsonRead(span, error=str(ex))


@dataclass(frozen=True, slots=True)
class JsonFound:
    """A JSON value found in a text, and where it was."""

    value: Any
    span: Span
    """Where it was, in the reply itself or in the inside of a code fence."""
    end_in_reply: int
    """Where the used part of the reply ends (for keeping only what was acted on)."""


def _starts(text: str, skip_to: list[int]) -> Iterator[tuple[str, int, int]]:
    """Candidate (source, start, offset-of-source-in-text) positions of a JSON object:
    the first ``{`` of each fence body, then each ``{`` of the text from ``skip_to[0]``
    on (those inside an object already tried are no candidates; the caller moves it)."""
    for match in _FENCE.finditer(text):
        i = text.find("{", match.start(1), match.end(1))
        if i >= 0:
            body = match.group(1)
            yield body, i - match.start(1), match.start(1)
    i = text.find("{")
    while i >= 0:
        yield text, i, 0
        i = text.find("{", max(i + 1, skip_to[0]))


def find_json(
    text: str,
    accept: Callable[[Any], bool],
    problems: list[str] | None = None,
    depth: int = MAX_NESTING,
) -> JsonFound | None:
    """The first JSON object in ``text`` that ``accept`` takes, fences first, then bare.

    Prose around the object is ignored. When no candidate is accepted, the first one
    that parsed to an object is returned (the caller then says what it lacks). Why
    candidates could not be read (nested deeper than ``depth``, too long to repair) is
    added to ``problems``.
    At most :data:`_MAX_CANDIDATES` are tried, sharing one repair budget: linear time.
    """
    fallback: JsonFound | None = None
    tried = 0
    skip_to = [0]  # bare candidates before this are inside an object already tried
    budget = RepairBudget()
    for source, start, offset in _starts(text, skip_to):
        tried += 1
        if tried > _MAX_CANDIDATES:
            break
        read = read_json(source, start, budget, depth)
        span = read.span
        if source is text:
            # objects nested in this one are not candidates of their own (nor, when it
            # is not known where it ends, anything after it)
            skip_to[0] = span.end if span.closed else len(text)
        if read.error is not None:
            if problems is not None:
                problems.append(read.error)
            continue
        value = read.value
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


NAME_JUNK = "`'\"*[](){}<>.,;: \t\r\n"


def norm_name(name: str) -> str:
    """A tool name as written by a model, normalised for matching.

    Brackets, quotes, backticks, markdown emphasis and a trailing ``()`` are removed,
    case is folded, spaces and hyphens become underscores: ``"[Web Search]"``,
    ``"`web-search`"`` and ``"web_search()"`` all give ``"web_search"``.
    """
    s = name.strip().strip(NAME_JUNK).lower()
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
