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
from dataclasses import dataclass
from typing import Any

from .._chat import ChatMessage, ToolInfo, ToolMessage

__all__ = ["MAX_VALUES", "SCAN_CHARS", "Grounding", "conversation_values", "worked_example"]

MAX_VALUES = 48
"""The most numbers (and the most result texts) a grammar offers."""
SCAN_CHARS = 4000
"""How much of each message is read for values."""
MAX_RESULT = 120
"""A tool result longer than this is not offered whole as an answer (its numbers are)."""

_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|\.\d|,\d{3})")


@dataclass(frozen=True, slots=True)
class Grounding:
    """The values of one conversation that actions may copy."""

    numbers: tuple[int | float, ...] = ()
    """Numbers of the user's turns and the tool results, first seen first."""
    results: tuple[str, ...] = ()
    """The tool results' texts (short ones), latest first."""

    @property
    def key(self) -> str:
        return json.dumps([self.numbers, self.results])


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
    for message in messages:
        if message.role == "user":
            numbers += _numbers(message.text)
        elif isinstance(message, ToolMessage):
            text = message.content if message.error is None else ""
            numbers += _numbers(text)
            text = text.strip()
            if text and len(text) <= MAX_RESULT and text not in results:
                results.insert(0, text)
    unique = list(dict.fromkeys((type(n) is float, n) for n in numbers))
    found = tuple(n for _, n in unique)
    if len(found) > MAX_VALUES:  # the latest ones: the question may be far back
        found = found[:8] + found[-(MAX_VALUES - 8) :]
    return Grounding(found, tuple(results[:MAX_VALUES]))


def ground_schema(schema: Any, numbers: Sequence[int | float]) -> Any:
    """``schema`` (a tool's arguments) with each ``integer``/``number`` property limited
    to ``numbers`` (those of the right type), recursively through properties and items.
    A property with its own ``enum``/``const``, or with no number of its type, is kept."""
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
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
        out["properties"] = {k: ground_schema(v, numbers) for k, v in props.items()}
    if isinstance(schema.get("items"), dict):
        out["items"] = ground_schema(schema["items"], numbers)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out[key] = [ground_schema(s, numbers) for s in schema[key]]
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


def _sample(name: str, schema: Any, index: int) -> Any:
    if not isinstance(schema, dict):
        return name.replace("_", " ")
    if schema.get("enum"):
        return schema["enum"][0]
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
        return [_sample(name, schema.get("items"), index)]
    if kind == "object":
        return {}
    return name.replace("_", " ")


def _spoken(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def worked_example(tool: ToolInfo) -> tuple[str, dict[str, Any]] | None:
    """A made-up question for ``tool`` and the arguments copied from it, or None when the
    tool takes no arguments. Required parameters only: an example shows the least."""
    props = tool.parameters.get("properties") or {}
    required = [p for p in tool.parameters.get("required") or [] if p in props]
    if not required:
        return None
    arguments = {p: _sample(p, props[p], i) for i, p in enumerate(required)}
    what = " ".join(tool.description.split()).split(". ")[0].rstrip(".") or tool.name
    values = ", ".join(_spoken(v) for v in arguments.values())
    return f"{what}: {values}", arguments
