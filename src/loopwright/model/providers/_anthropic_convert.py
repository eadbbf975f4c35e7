"""Messages, tools and replies to and from Anthropic's Messages API wire format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._chat import AssistantMessage, ChatMessage, ToolCall, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput, StopReason, Usage
from ._tokens import optional_count, token_count
from ._tool_args import make_tool_call, tool_result_text
from ._wire_text import valid_text

__all__ = [
    "STOP_REASONS",
    "cut_reply",
    "messages_to_anthropic",
    "output_from_anthropic",
    "request_options",
]

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "max_tokens",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "model_context_window_exceeded": "model_length",
    # the API paused a long turn (server tools); the caller would have to resend it
    "pause_turn": "unknown",
}
"""Anthropic ``stop_reason`` -> :data:`StopReason`; anything else is ``unknown``."""

_EMPTY = "(empty message)"  # the API rejects empty text blocks


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def messages_to_anthropic(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` for a Messages API request.

    Leading system messages become the ``system`` prompt; later ones are sent as user
    text. Tool results become ``tool_result`` blocks (``is_error`` for failed calls), all
    results of one turn in one user message, before any text of that message, as the API
    requires. Empty assistant messages are left out; reasoning is not sent back.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages) and messages[i].role == "system":
        system.append(messages[i].content)
        i += 1

    def user_blocks() -> list[dict[str, Any]]:
        if out and out[-1]["role"] == "user":
            blocks: list[dict[str, Any]] = out[-1]["content"]
            return blocks
        blocks = []
        out.append({"role": "user", "content": blocks})
        return blocks

    for m in messages[i:]:
        if m.role == "assistant":
            blocks = [_text(m.content)] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.function, "input": c.arguments}
                for c in m.tool_calls
            ]
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif m.role == "tool":
            target = user_blocks()
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": tool_result_text(m) or _EMPTY,
            }
            if m.error is not None:
                result["is_error"] = True
            at = 0
            while at < len(target) and target[at]["type"] == "tool_result":
                at += 1
            target.insert(at, result)
        else:  # user, or a system message after the conversation began
            user_blocks().append(_text(m.content or _EMPTY))
    return ("\n\n".join(system) if system else None), out


def request_options(config: GenerateConfig, tools: Sequence[ToolInfo]) -> dict[str, Any]:
    """The request fields ``config`` sets (model, max_tokens and messages aside)."""
    opts: dict[str, Any] = {}
    if tools:
        opts["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        choice: dict[str, Any] | None = None
        tc = config.tool_choice
        if isinstance(tc, str):
            choice = {"type": tc}  # auto, any and none are Anthropic's names too
        elif tc is not None:
            choice = {"type": "tool", "name": tc.name}
        if config.parallel_tool_calls is False:
            choice = choice or {"type": "auto"}
            if choice["type"] != "none":
                choice["disable_parallel_tool_use"] = True
        if choice is not None:
            opts["tool_choice"] = choice
    stops = [s for s in config.stop_seqs or [] if s.strip()]  # the API rejects blank ones
    if stops:
        opts["stop_sequences"] = stops
    # Sampling settings go in the body directly: recent SDKs no longer take them as
    # arguments (newer models fix them), older ones do; the body works with both.
    extra: dict[str, Any] = {}
    if config.temperature is not None:
        extra["temperature"] = config.temperature
    if config.top_p is not None:
        extra["top_p"] = config.top_p
    extra.update(config.extra_body or {})
    if extra:
        opts["extra_body"] = extra
    return opts


def _usage(usage: Any) -> Usage | None:
    """The usage of a reply; None when it has none, or counts that are none (see
    :mod:`._tokens`)."""
    if usage is None:
        return None
    try:
        fresh = token_count(getattr(usage, "input_tokens", None))
        read = optional_count(getattr(usage, "cache_read_input_tokens", None))
        write = optional_count(getattr(usage, "cache_creation_input_tokens", None))
        out = token_count(getattr(usage, "output_tokens", None))
    except ValueError:
        return None
    # Anthropic counts cached input apart; input_tokens here is all input, as elsewhere
    total_in = fresh + (read or 0) + (write or 0)
    return Usage(
        input_tokens=total_in,
        output_tokens=out,
        total_tokens=total_in + out,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def output_from_anthropic(response: Any, tools: Sequence[ToolInfo], model: str) -> ModelOutput:
    """The :class:`ModelOutput` of a Messages API response.

    Raises:
        TypeError: ``response`` has no list of content blocks: it is no message (a 200
            whose body is an HTML page or ``{}``), not an empty reply.
    """
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    content = getattr(response, "content", None)
    if not isinstance(content, list):
        raise TypeError(f"the response is not a message (its content is {type(content).__name__})")
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            calls.append(make_tool_call(block.id, block.name, block.input, tools, wire_json=False))
        elif kind == "thinking":
            thoughts.append(block.thinking)
    reason = getattr(response, "stop_reason", None)
    stop: StopReason = STOP_REASONS.get(reason or "", "unknown")
    if calls and stop == "stop":
        stop = "tool_calls"
    return ModelOutput(
        message=AssistantMessage(
            content=valid_text("".join(texts)),
            tool_calls=calls,
            reasoning=valid_text("\n\n".join(thoughts)) or None,
            model=model,
        ),
        stop_reason=stop,
        usage=_usage(getattr(response, "usage", None)),
        model=model,
    )


def cut_reply(output: ModelOutput, limit: int) -> ModelOutput:
    """``output`` of a stream read no further than ``limit`` characters: ``max_tokens``,
    and its tool calls not run (the SDK parses a partial input into an object, so a
    call cut short would look whole)."""
    error = (
        f"the reply was longer than {limit:,} characters (GenerateConfig.max_output_chars) "
        "and was cut before this call was complete; send it again, shorter"
    )
    message = output.message
    calls = [
        c.model_copy(update={"arguments": {}, "parse_error": c.parse_error or error})
        for c in message.tool_calls
    ]
    message = message.model_copy(update={"tool_calls": calls, "id": message.id})
    return replace(output, message=message, stop_reason="max_tokens")
