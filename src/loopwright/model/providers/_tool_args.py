"""Tool-call arguments from the wire into :class:`ToolCall`\\ s, and tool results back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..._nesting import MAX_NESTING, nesting_exceeds
from .._chat import ToolCall, ToolInfo, ToolMessage

__all__ = ["make_tool_call", "tool_result_text"]

_SHOW = 200  # characters of a bad argument string quoted back to the model


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)[:_SHOW]
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def _required(tools: Sequence[ToolInfo], name: str) -> list[str] | None:
    for tool in tools:
        if tool.name == name:
            required = tool.parameters.get("required") or []
            return [str(r) for r in required] if isinstance(required, list) else []
    return None


def make_tool_call(
    call_id: str | None,
    name: str,
    raw: Any,
    tools: Sequence[ToolInfo],
    *,
    wire_json: bool = True,
) -> ToolCall:
    """A :class:`ToolCall` from the arguments a provider returned.

    ``raw`` is a JSON string (OpenAI, ``wire_json``) or an already parsed value
    (Anthropic; a string there is still tried as JSON, leniently). Anything
    that is not a JSON object becomes ``parse_error`` (the call is then not executed and
    the model is told what was wrong). An empty string counts as ``{}`` for a tool with
    no required parameters (some servers send that for argument-less calls), and as an
    error otherwise. Arguments nested more than ``MAX_NESTING`` (100) levels are an error
    too, never a ``RecursionError`` (see :mod:`loopwright._nesting`).
    """
    kwargs: dict[str, Any] = {"function": name}
    if call_id:
        kwargs["id"] = call_id
    error: str | None = None
    value: Any = raw
    too_deep = False
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        required = _required(tools, name)
        if required:
            error = (
                f"the arguments of {name} were empty; send a JSON object with at least "
                f"{', '.join(repr(r) for r in required)}"
            )
        value = {}
    elif isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as ex:
            shown = raw if len(raw) <= _SHOW else raw[:_SHOW] + "..."
            error = (
                f"the arguments of {name} are not valid JSON ({ex.msg} at character "
                f"{ex.pos}): {shown}"
                if wire_json
                else f"the arguments of {name} must be a JSON object, got {shown!r}"
            )
            value = {}
        except RecursionError:
            too_deep = True
    if error is None and (too_deep or nesting_exceeds(value)):
        error = (
            f"the arguments of {name} are nested more than {MAX_NESTING} levels "
            "deep; send a flat JSON object"
        )
        value = {}
    if error is None and not isinstance(value, dict):
        error = f"the arguments of {name} must be a JSON object, got {_shown(value)}"
        value = {}
    return ToolCall(**kwargs, arguments=value, parse_error=error)


def tool_result_text(message: ToolMessage) -> str:
    """What the model reads for a tool result: the content, or the error's message."""
    if message.error is not None and not message.content:
        return f"Error: {message.error.message}"
    return message.content
