"""The attribute names of the OpenTelemetry GenAI semantic conventions, and contents.

The names follow the GenAI conventions (``gen_ai.*``, development status, as of the
semantic-conventions 1.37 to 1.41 documents): ``invoke_agent`` spans for runs, ``chat``
spans for model calls and ``execute_tool`` spans for tool calls. Names of loopwright's
own are under ``loopwright.*``.

Message contents (the conversation, tool arguments and results, info data, log
messages, sandbox commands) may hold personal data: they are recorded only when asked
for, each value cut to a bound, as the conventions' JSON forms.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .._terminal import one_line, whole_before
from ..model import AssistantMessage, ChatMessage, ModelOutput, ToolMessage
from ..model._redact import redact_known
from ..model.providers._wire_text import valid_text

__all__ = [
    "AGENT_NAME",
    "CONTENTS_ENV",
    "ERROR_TYPE",
    "INPUT_MESSAGES",
    "INPUT_TOKENS",
    "LABELS",
    "MAX_LABEL",
    "OPERATION",
    "OUTPUT_MESSAGES",
    "OUTPUT_TOKENS",
    "PROVIDER",
    "REQUEST_MODEL",
    "RUN_ID",
    "SYSTEM",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "TOOL_RESULT",
    "bounded",
    "finish_reason",
    "input_messages",
    "json_value",
    "label",
    "output_messages",
    "redacted",
    "split_model",
]

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"  # the older name of gen_ai.provider.name, still read by many viewers
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
RUN_ID = "loopwright.run.id"
SAMPLE_ID = "loopwright.sample.id"

LABELS = frozenset(
    {
        AGENT_NAME, PROVIDER, SYSTEM, REQUEST_MODEL, RESPONSE_MODEL, TOOL_NAME, TOOL_CALL_ID,
        ERROR_TYPE, SAMPLE_ID, "exception.type", "loopwright.span.type",
        "loopwright.subtask.type", "loopwright.limit.type", "loopwright.approval.decision",
        "source", "level", "logger", "decision", "approver",
    }
)  # fmt: skip
"""The attributes that name or identify (not contents): each value through :func:`label`."""

CONTENTS_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable the OpenTelemetry GenAI instrumentations read to record
message contents (``true``); ``instrument()`` reads it when ``contents`` is not given."""

_FINISH = {"max_tokens": "length", "model_length": "length"}


def finish_reason(stop_reason: str) -> str:
    """A loopwright ``StopReason`` as the conventions' finish reason."""
    return _FINISH.get(stop_reason, stop_reason)


def split_model(name: str) -> tuple[str, str]:
    """``provider/model`` -> (provider, model); a name without a provider is its own."""
    provider, sep, model = name.partition("/")
    return (provider, model) if sep else (name, name)


_SLACK = 4096  # characters redacted beyond a cut: more than any secret


def redacted(text: str) -> str:
    """``text`` with every secret learnt redacted, as plain text and as JSON writes it
    (as the run store redacts its rows: ``model/_redact.py``)."""
    return redact_known(text, plain=True)


def _redacted_start(text: str, limit: int) -> str:
    """The start of ``text``, the secrets learnt redacted, which may be cut anywhere in
    its first ``limit`` characters: the text read is bounded (``limit`` and
    :data:`_SLACK`), and a secret it ends in the middle of (not redacted: not whole)
    is in the last :data:`_SLACK` characters, which are dropped (the window read grows,
    up to eight times, while what is left is shorter than ``limit``). (Cutting the redacted
    text at ``limit`` alone would not do: the secrets redacted before shrink it, and
    bring the end of what was read, a secret's first part, within ``limit``.)"""
    size = limit + _SLACK
    for _ in range(4):  # (a wider window while the secrets redacted leave too little)
        window = text[:size]
        shown = redacted(window)
        if len(window) == len(text):
            return shown
        shown = shown[: max(0, len(shown) - _SLACK)]
        if len(shown) >= limit:
            break
        size *= 2
    return shown


def bounded(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was cut; the secrets
    learnt are redacted before the cut, so none is cut in two and part of it kept."""
    if len(text) <= limit:
        return text
    return f"{_redacted_start(text, limit)[:limit]}...[{len(text) - limit} characters cut]"


MAX_LABEL = 200
"""The most characters of a name or an id in a span's name or attribute: a task's name, a
sample's id (a dataset's), a tool's name (a model's choice, an MCP server's), a span's."""


def label(value: str, limit: int = MAX_LABEL) -> str:
    """A name or an id as a span may show it: one line, every control, bidi or
    invisible character escaped as ``_terminal.one_line`` shows it (``\\x1b``,
    ``\\u202e``, ``\\n``: nothing acts on a viewer or hides, and two names that differ
    still look different), a lone surrogate U+FFFD (as :func:`~._common.text` has it),
    the secrets learnt redacted, and past ``limit`` characters cut, saying how long it
    was: the cut keeps whole escapes and characters (never ``\\x1`` of ``\\x1b``, nor
    a letter without its combining mark). The work is bounded by ``limit``, whatever
    the length of ``value``."""
    text = valid_text(_redacted_start(value, limit))
    shown = one_line(text)
    if len(shown) <= limit and len(value) <= limit + _SLACK:
        return shown
    end = size = 0
    for char in text[:limit]:  # (each character escaped alone as one_line escapes it)
        size += len(one_line(char))
        if size > limit:
            break
        end += 1
    return f"{one_line(text[: whole_before(text, end)])}...[{len(value):,} characters, cut]"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(repr(value))


def json_value(value: Any, limit: int) -> str:
    """``value`` as JSON text (its ``repr`` when it is not JSON data), bounded."""
    return bounded(_json_text(value), limit)


_ID = 200  # the most characters of a tool call's id or name in a message's parts


def _parts(message: ChatMessage, limit: int) -> list[dict[str, Any]]:
    """A message's parts, their contents ``limit`` characters together (not each): the
    parts past it are one ``text`` part saying how many were left out."""
    left = limit

    def cut(text: str) -> str:
        nonlocal left
        kept = bounded(text, max(left, 0))
        left -= len(kept)
        return kept

    if isinstance(message, ToolMessage):
        response = cut(message.text)
        id = message.tool_call_id[:_ID]
        return [{"type": "tool_call_response", "id": id, "response": response}]
    parts: list[dict[str, Any]] = []
    if isinstance(message, AssistantMessage) and message.reasoning:
        parts.append({"type": "reasoning", "content": cut(message.reasoning)})
    if message.text:
        parts.append({"type": "text", "content": cut(message.text)})
    calls = message.tool_calls if isinstance(message, AssistantMessage) else []
    for i, call in enumerate(calls):
        if left <= 0:
            parts.append({"type": "text", "content": f"[{len(calls) - i} parts cut]"})
            break
        id, name = call.id[:_ID], call.function[:_ID]
        left -= len(id) + len(name)
        text = _json_text(call.arguments)
        if len(text) <= left:  # JSON data, or cut text when too long
            arguments: Any = json.loads(text)
            left -= len(text)
        else:
            arguments = cut(text)
        parts.append({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
    return parts


CACHED = 1024
"""The most messages whose JSON ``input_messages`` keeps (the newest: those a call's
input may show again)."""


def input_messages(
    newest: Iterable[ChatMessage], total: int, limit: int, cache: dict[str, str] | None = None
) -> tuple[str, int]:
    """``gen_ai.input.messages``: the newest messages that fit in about ``limit``
    characters, from ``newest`` (a call's input newest first, read only as far as
    needed: the work is bounded by the limit, not by the conversation's length), and
    how many older ones of the ``total`` were left out. ``cache`` keeps the JSON of the
    :data:`CACHED` messages serialised last by id, so that a message is serialised once
    per run, not once per step."""
    kept: list[str] = []
    size = 0
    for message in newest:
        item = cache.get(message.id) if cache is not None else None
        if item is None:
            item = json.dumps(
                {"role": message.role, "parts": _parts(message, limit)}, ensure_ascii=False
            )
            if cache is not None:
                cache[message.id] = item
                if len(cache) > CACHED:
                    del cache[next(iter(cache))]
        if kept and size + len(item) > limit:
            break
        kept.append(item)
        size += len(item) + 1
    kept.reverse()
    return "[" + ",".join(kept) + "]", total - len(kept)


def output_messages(output: ModelOutput, limit: int) -> str:
    """``gen_ai.output.messages``: the reply, with its finish reason."""
    message = {
        "role": "assistant",
        "parts": _parts(output.message, limit),
        "finish_reason": finish_reason(output.stop_reason),
    }
    return json.dumps([message], ensure_ascii=False)
