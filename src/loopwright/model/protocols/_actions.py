"""Reading an action's input text (a JSON object, near-JSON, or plain text) into a tool
call's arguments: what every text protocol that names a tool and gives it an input
shares (see :meth:`~._text.TextProtocol.action`).

Linear in the input's length: input nested more than 100 levels deep cannot be used,
and near-JSON is repaired only up to 32,000 characters (strict JSON of any size is read).
"""

from __future__ import annotations

import json
from typing import Any

from .._chat import ToolInfo
from .._output import StopReason
from ._parsing import (
    TOO_DEEP,
    is_string_schema,
    load_json,
    read_json,
    required_params,
    single_string_param,
    strip_fences,
)
from ._toolset import answer_text

__all__ = ["MAX_NAME", "SHOW", "action_arguments", "answer_input", "shown"]

SHOW = 300
"""The most characters of a bad input quoted back to the model."""
MAX_NAME = 200
"""A tool name longer than this is not one (it is not passed on as one)."""


def shown(text: str) -> str:
    """``text`` as quoted back to the model: stripped, at most :data:`SHOW` characters."""
    text = text.strip()
    return text if len(text) <= SHOW else text[:SHOW] + "..."


def answer_input(raw: str | None) -> Any:
    """A final answer given as an action's input: the text, or the value of a JSON
    object with a single key (``{"answer": 42}`` -> ``42``)."""
    value = strip_fences(raw or "")
    if value.startswith("{"):
        try:
            obj = load_json(value)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and len(obj) == 1:
            return next(iter(obj.values()))
    return value


def action_arguments(
    tool: ToolInfo | None, function: str, raw: str | None, stop_reason: StopReason, label: str
) -> dict[str, Any] | str:
    """The call's arguments from its input text ``raw``, or what was wrong with it
    (``label`` names the input in that message, e.g. ``Action Input``).

    A JSON object (in a fence or not; near-JSON repaired), or plain text for a tool
    taking a single string; a missing input is ``{}`` for a tool without required
    parameters."""
    text = strip_fences(raw) if raw is not None else ""
    if not text:
        required = required_params(tool) if tool is not None else []
        if required:
            return (
                f"Your {label} for {function} is missing; it needs "
                f"{', '.join(repr(r) for r in required)}."
            )
        return {}
    single = single_string_param(tool) if tool is not None else None
    props = set((tool.parameters.get("properties") or {}) if tool is not None else ())
    if text[0] in "{[":
        read = read_json(text, 0)
        if read.span.deep:
            return f"Your {label} for {function} is not usable: {TOO_DEEP}."
        if not read.span.closed and stop_reason == "max_tokens":
            return (
                f"Your {label} for {function} was cut off by the output token "
                "limit before it was complete. Write a shorter input."
            )
        value, why = read.value, read.error
        if isinstance(value, dict) and (single is None or set(value) <= props):
            return value
        if single is not None:
            return {single: text}
        if value is None:
            return (
                f"Your {label} for {function} is not usable ({why}): "
                f"{shown(text)}. Write it as a JSON object."
            )
        return _coerce(tool, function, value, label)
    if text[0] in "\"'":
        try:
            value = load_json(text)
        except ValueError:
            value = None
        if isinstance(value, str):
            text = value
    if single is not None:
        return {single: text}
    if tool is not None and len(props) == 1:
        try:
            return _coerce(tool, function, load_json(text), label)
        except ValueError:
            pass
    example = {p: "..." for p in (required_params(tool) if tool is not None else [])}
    return (
        f"Your {label} for {function} must be a JSON object like "
        f"{json.dumps(example) if example else '{...}'}, got: {shown(text)}"
    )


def _coerce(tool: ToolInfo | None, function: str, value: Any, label: str) -> dict[str, Any] | str:
    props = (tool.parameters.get("properties") or {}) if tool is not None else {}
    if len(props) == 1:
        name, schema = next(iter(props.items()))
        if not isinstance(value, str) and is_string_schema(schema):
            value = answer_text(value)
        return {name: value}
    return (
        f"Your {label} for {function} must be a JSON object with its arguments, "
        f"got: {shown(json.dumps(value, ensure_ascii=False))}"
    )
