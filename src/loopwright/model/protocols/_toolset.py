"""What the text protocols share besides rendering: the prepared tool set, a parsed
reply, and how replies and answers read back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._chat import AssistantMessage, ChatMessage, ToolCall, ToolInfo
from ._base import FORMAT_ERROR_FUNCTION
from ._parsing import norm_name

__all__ = [
    "ANSWER_TOOL_NAMES",
    "Reply",
    "ToolSet",
    "answer_text",
    "is_feedback",
    "unparsed_reply",
]

ANSWER_TOOL_NAMES = ("submit", "finish")
"""Tools a final answer maps to, in order of preference, unless a protocol is told."""

_LONGEST_NAME = 1000
"""Longer text is not looked up as a tool name (no tool is named so; bounds the work)."""
_ANSWER_ALIASES = frozenset({"finish", "final_answer", "finalanswer", "answer", "submit"})


@dataclass(slots=True)
class ToolSet:
    """The tools of one request, prepared for a text protocol (cached per tool list)."""

    key: str
    tools: list[ToolInfo]
    """Every tool that may be called."""
    visible: list[ToolInfo]
    """The tools listed as actions in the prompt (the answer tool may be left out)."""
    answer: ToolInfo | None
    """The tool a final answer maps to (``submit``), if one is offered."""
    answer_param: str
    """The answer tool's parameter that the answer fills."""
    forced: str | None = None
    """The tool that must be called (``tool_choice``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Protocol-specific data (e.g. the ``json`` protocol's response schema)."""
    _lookup: dict[str, ToolInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for info in self.tools:
            key = norm_name(info.name)
            self._lookup.setdefault(key, info)
            self._lookup.setdefault(key.replace("_", ""), info)

    def find(self, written: str) -> ToolInfo | None:
        """The tool a model meant by ``written`` (any case, in brackets, quotes...)."""
        if len(written) > _LONGEST_NAME:
            return None
        key = norm_name(written)
        return self._lookup.get(key) or self._lookup.get(key.replace("_", ""))

    def is_answer_alias(self, written: str) -> bool:
        """Whether ``written`` names the final answer (``finish``, ``Final Answer``...)."""
        if len(written) > _LONGEST_NAME:
            return False
        key = norm_name(written)
        return key in _ANSWER_ALIASES or (
            self.answer is not None and key == norm_name(self.answer.name)
        )


@dataclass(slots=True)
class Reply:
    """A parsed reply: what the assistant message will hold."""

    thought: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    content: str = ""
    kept: int | None = None
    """Where the part of the reply that was acted on ends (the rest is dropped from
    the history); ``None`` keeps it all."""
    error: str | None = None
    """What was wrong with a reply that names no tool (``AssistantMessage.format_error``)."""


def is_feedback(messages: Sequence[ChatMessage], i: int) -> bool:
    """Whether ``messages[i]`` (a user message) tells the model what was wrong with the
    reply before it (a format error): it is then shown as that protocol's error
    observation, as a tool's error would be."""
    if i == 0:
        return False
    before = messages[i - 1]
    return (
        isinstance(before, AssistantMessage)
        and before.format_error is not None
        and before.format_error == messages[i].content
    )


def answer_text(value: Any) -> str:
    """A final answer as text: strings as they are, other values as JSON (``0``, ``[]``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def unparsed_reply(message: AssistantMessage) -> str | None:
    """The text of a reply that could not be parsed (a format error, or every call a
    parse error), to be shown again as it was; ``None`` for any other message."""
    if message.format_error is not None:
        return message.content
    calls = message.tool_calls
    if not calls or any(c.parse_error is None for c in calls):
        return None
    if message.content or all(c.function == FORMAT_ERROR_FUNCTION for c in calls):
        return message.content
    return None
