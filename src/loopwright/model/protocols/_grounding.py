"""What the ``json`` protocol does for small models: values grounded in the conversation
and a worked example made from the agent's own tools.

- :func:`conversation_values` reads the numbers written in the user's turns and the tool
  results, and the tool results' short texts. With ``ground_numbers`` the json protocol's
  grammar lets a numeric argument be only one of those numbers (copied from the question
  or a result, never invented); with ``ground_answer`` the final answer, once a tool has
  returned something, is one of the results (or one of their numbers).
- :func:`worked_example` is a short made-up exchange (a question, a call of one of the
  agent's tools with values copied from it, its result, the final answer copying the
  result) shown in the prompt: ``JsonProtocol(examples="auto")``.

Everything here is bounded: at most :data:`MAX_VALUES` values, read from at most
:data:`SCAN_CHARS` characters of each message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._chat import AssistantMessage, ChatMessage, ToolInfo, ToolMessage

__all__ = [
    "MAX_VALUES",
    "SCAN_CHARS",
    "Grounding",
    "call_key",
    "conversation_values",
    "embed_schema",
    "ground_answer",
    "ground_schema",
    "plain_thought_pattern",
    "worked_example",
    "worked_examples",
]

MAX_VALUES = 48
"""The most numbers (and the most result texts) a grammar offers."""
SCAN_CHARS = 4000
"""How much of each message is read for values."""
EXAMPLE_TOOLS = 6
"""The most tools the automatic worked example shows."""
_SKIP = frozenset({"enum", "const", "default", "examples"})
_FIXED_TEXT = frozenset({"maxLength", "enum", "const", "pattern", "format"})
MAX_PHRASE = 6
"""The most words of a phrase a free-text argument may copy."""
MAX_PHRASES = 256
"""The most phrases a grammar offers."""
MAX_RESULT = 120
"""A tool result longer than this is not offered whole as an answer (its numbers are)."""

_WORD = re.compile(r"[^\W_]+")
_PART = re.compile(r"[\"'`,;:!?()\[\]{}]+|\.(?!\d)")
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|\.\d|,\d{3})")


@dataclass(frozen=True, slots=True)
class Grounding:
    """The values of one conversation that actions may copy."""

    numbers: tuple[int | float, ...] = ()
    """Numbers of the user's turns and the tool results, first seen first."""
    results: tuple[str, ...] = ()
    """The tool results' texts (short ones), latest first."""
    words: frozenset[str] = frozenset()
    """The words of the user's turns and the tool results (as written)."""
    done: dict[str, str] = field(default_factory=dict)
    """The successful calls so far (:func:`call_key`) and their results."""
    phrases: tuple[str, ...] = ()
    """Runs of 1 to :data:`MAX_PHRASE` words of the user's turns and the tool results."""

    @property
    def key(self) -> str:
        return json.dumps([self.numbers, self.results, sorted(self.words), self.phrases])


def call_key(function: str, arguments: Any) -> str:
    """A call's identity: its tool and arguments (numbers compared by value)."""
    return json.dumps([function, _canonical(arguments)], sort_keys=True, default=str)


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _numbers(text: str) -> list[int | float]:
    out: list[int | float] = []
    for match in _NUMBER.finditer(text[:SCAN_CHARS]):
        raw = match.group().replace(",", "")
        try:
            value = float(raw)
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            continue
        if value != value or abs(value) > 1e15:
            continue
        out.append(int(value) if value.is_integer() else value)
    return out


def conversation_values(messages: Sequence[ChatMessage]) -> Grounding:
    """The numbers and tool results a small model's actions may copy (see the module)."""
    numbers: list[int | float] = []
    results: list[str] = []
    words: set[str] = set()
    calls: dict[str, str] = {}
    done: dict[str, str] = {}
    phrases: dict[str, None] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                calls[call.id] = call_key(call.function, call.arguments)
            continue
        if message.role == "user":
            text = message.text
        elif isinstance(message, ToolMessage) and message.error is None:
            text = message.content
            if message.tool_call_id in calls:
                done[calls[message.tool_call_id]] = text
        else:
            continue
        numbers += _numbers(text)
        words.update(_WORD.findall(text[:SCAN_CHARS]))
        for phrase in _phrases(text):
            phrases.setdefault(phrase, None)
        text = text.strip()
        if message.role == "tool" and text and len(text) <= MAX_RESULT and text not in results:
            results.insert(0, text)
    unique = list(dict.fromkeys((type(n) is float, n) for n in numbers))
    found = tuple(n for _, n in unique)
    if len(found) > MAX_VALUES:  # the latest ones: the question may be far back
        found = found[:8] + found[-(MAX_VALUES - 8) :]
    every = tuple(phrases)  # the question's first, the latest results' last
    half = MAX_PHRASES // 2
    kept = every if len(every) <= MAX_PHRASES else every[:half] + every[-half:]
    return Grounding(found, tuple(results[:MAX_VALUES]), frozenset(words), done, kept)


def _phrases(text: str) -> list[str]:
    """Runs of 1 to :data:`MAX_PHRASE` words of ``text``, each within one sentence part
    (quotes, commas, colons... end a run)."""
    out: list[str] = []
    for part in _PART.split(text[:SCAN_CHARS]):
        tokens = part.split()
        for i in range(len(tokens)):
            for n in range(1, min(MAX_PHRASE, len(tokens) - i) + 1):
                out.append(" ".join(tokens[i : i + n]))
    return out


def ground_schema(schema: Any, values: Grounding) -> Any:
    """``schema`` (a tool's arguments) with each ``integer``/``number`` property limited
    to the conversation's numbers (those of the right type), each string ``enum`` to
    the values written in it as words, and each free-text string to its phrases,
    recursively through properties and items. A property with its own ``const``, or
    with none of its values written, is kept."""
    if not isinstance(schema, dict):
        return schema
    numbers = values.numbers
    options = schema.get("enum")
    if isinstance(options, list) and all(isinstance(o, str) for o in options):
        written = [o for o in options if o in values.words]
        return {**schema, "enum": written} if written else schema
    kind = schema.get("type")
    if kind == "string" and values.phrases and not _FIXED_TEXT.intersection(schema):
        return {**{k: v for k, v in schema.items() if k != "type"}, "enum": list(values.phrases)}
    if kind in ("integer", "number") and "enum" not in schema and "const" not in schema:
        allowed = [n for n in numbers if kind == "number" or isinstance(n, int)]
        if not allowed:
            return schema
        out = {k: v for k, v in schema.items() if k not in ("minimum", "maximum")}
        out.pop("type")
        out["enum"] = allowed
        return out
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: ground_schema(v, values) for k, v in props.items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = ground_schema(schema["items"], values)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out[key] = [ground_schema(s, values) for s in schema[key]]
    return out


def ground_answer(params: dict[str, Any], param: str, values: Grounding) -> dict[str, Any]:
    """The answer action's arguments schema with its ``param`` limited to the tool results
    (whole, or one of their numbers), when a tool has returned something."""
    props = params.get("properties") or {}
    if not values.results or not isinstance(props.get(param), dict):
        return params
    if props[param].get("type", "string") != "string":
        return params
    choices = list(values.results)
    for result in values.results:
        choices += [str(n) for n in _numbers(result) if str(n) not in choices]
    answer = {k: v for k, v in props[param].items() if k not in ("type", "maxLength")}
    answer["enum"] = choices[:MAX_VALUES]
    return {**params, "properties": {**props, param: answer}}


_WORDS = ("apple pie", "river", "north", "blue")
"""Made-up text values of the worked example: plainly not a parameter's name, which a
small model would copy instead of the question's words."""


def _sample(schema: Any, index: int) -> Any:
    if not isinstance(schema, dict):
        return _WORDS[index % 4]
    if schema.get("enum"):  # a different value per parameter: not "from mm to mm"
        return schema["enum"][index % len(schema["enum"])]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "integer":
        return (12, 7, 3, 5)[index % 4]
    if kind == "number":
        return (2.5, 4, 1.5, 6)[index % 4]
    if kind == "boolean":
        return True
    if kind == "array":
        return [_sample(schema.get("items"), index)]
    if kind == "object":
        return {}
    return _WORDS[index % 4]


def _spoken(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


def worked_example(tool: ToolInfo) -> tuple[str, dict[str, Any]] | None:
    """A made-up question for ``tool`` and the arguments copied from it, or None when the
    tool takes no arguments. Required parameters only: an example shows the least."""
    props = tool.parameters.get("properties") or {}
    required = [p for p in tool.parameters.get("required") or [] if p in props]
    if not required:
        return None
    arguments = {p: _sample(props[p], i) for i, p in enumerate(required)}
    what = " ".join(tool.description.split()).split(". ")[0].rstrip(".") or tool.name
    values = ", ".join(_spoken(v) for v in arguments.values())
    return f"{what}: {values}", arguments


def embed_schema(
    schema: Any, prefix: str, defs: dict[str, Any], max_string: int | None = None
) -> Any:
    """``schema`` with its ``$defs`` moved into ``defs`` (names prefixed) and its
    ``$ref``\\ s rewritten, so it can sit anywhere inside a larger schema; with
    ``max_string``, every free-text string gets that ``maxLength`` (unless it has one)."""
    if isinstance(schema, list):
        return [embed_schema(s, prefix, defs, max_string) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                defs[prefix + name] = embed_schema(sub, prefix, defs, max_string)
        elif key == "$ref" and isinstance(value, str):
            for root in ("#/$defs/", "#/definitions/"):
                if value.startswith(root):
                    value = "#/$defs/" + prefix + value[len(root) :]
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: embed_schema(v, prefix, defs, max_string) for k, v in value.items()}
        elif key in _SKIP:
            out[key] = value
        else:
            out[key] = embed_schema(value, prefix, defs, max_string)
    if max_string is not None and out.get("type") == "string" and not _FIXED_TEXT.intersection(out):
        out["maxLength"] = max_string
    return out


def worked_examples(tools: Sequence[ToolInfo], finish: str, answer_param: str) -> str:
    """One made-up question per tool (at most :data:`EXAMPLE_TOOLS`) and its call, in the
    json protocol's format; the first goes on to its result and the final answer."""
    lines: list[str] = []
    for tool in tools[:EXAMPLE_TOOLS]:
        made = worked_example(tool)
        if made is None:
            continue
        question, arguments = made
        if lines:
            lines.append("")
        lines.append(f"User: {question}")
        lines.append(_example_line(f"I use {tool.name}.", tool.name, arguments))
        if len(lines) == 2:
            result = f"<the result of {tool.name}>"
            lines.append(json.dumps({"observation": result}))
            thought = "The observation answers the question."
            lines.append(_example_line(thought, finish, {answer_param: result}))
    return "\n".join(lines)


def _example_line(thought: str, name: str, arguments: dict[str, Any]) -> str:
    action = {"name": name, "arguments": arguments}
    return json.dumps({"thought": thought, "action": action}, ensure_ascii=False)


_NOT_PLAIN = r'0-9"\\\x00-\x1f\x7f-\xbf\xd7\xf7\u0250-\U0010ffff'
# what a plain thought never holds: a digit, what JSON escapes, and all but Latin letters
# beyond ASCII (so no digit of another script, no "¼" or "²" standing in for a number)
_WORD_CHAR = f"[^ .!?{_NOT_PLAIN}]"
_AFTER_SPACE = f"[^ .!?,;:{_NOT_PLAIN}]"


def plain_thought_pattern(most: int | None) -> str:
    """The ``pattern`` of a plain thought: empty, or one sentence ending with ``.``, ``!``
    or ``?``, words parted by single spaces, no space before a mark (``is .``), no digit,
    and at most ``most`` characters besides its spaces (no bound: None)."""
    if most is not None and most < 2:
        return "^$"  # no room for a sentence: no thought
    bound = "*" if most is None else f"{{0,{most - 2}}}"
    return f"^({_WORD_CHAR}({_WORD_CHAR}| {_AFTER_SPACE}){bound}[.!?])?$"
