"""Messages, tools and replies to and from the OpenAI chat-completions wire format."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from ..._prefix import starts_with
from .._chat import AssistantMessage, ChatMessage, ToolCall, ToolInfo
from .._config import GenerateConfig, ToolChoice
from .._output import ModelOutput, StopReason, Usage
from .._stream import ReasoningDelta, StreamDelta, TextDelta
from ..protocols._cache import LRU
from ._strict_tools import StrictTools
from ._tokens import optional_count, token_count
from ._tool_args import make_tool_call, tool_result_text
from ._wire_text import valid_text

__all__ = [
    "FINISH_REASONS",
    "ChunkAssembler",
    "WireCache",
    "messages_to_openai",
    "output_from_openai",
    "request_options",
    "tools_to_openai",
]

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
"""OpenAI ``finish_reason`` -> :data:`StopReason`; anything else is ``unknown``."""


def _assistant(message: AssistantMessage, null_content: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
        if not message.content and null_content:
            out["content"] = None
    return out


class WireCache:
    """The wire form of messages already sent: a request converts only the messages it
    did not send before, so a step's cost does not grow with the conversation.

    Each message's dict is kept by message id (and checked to come from the very same
    message object, with the same ``null_content``); each conversation's last list is
    kept too (by its first message's id), and a request that extends it (the same
    objects first: :func:`~loopwright._prefix.starts_with`) converts and looks up only
    its new messages. The dicts are shared between requests: nothing may change them.
    """

    def __init__(self, size: int = 16384) -> None:
        self._wire: LRU[str, tuple[ChatMessage, bool, dict[str, Any]]] = LRU(size)
        # first message id -> (the messages, their wire form, null_content) last sent
        self._last: LRU[str, tuple[list[ChatMessage], list[dict[str, Any]], bool]] = LRU(
            64, weigh=lambda kept: len(kept[0]), max_weight=size
        )
        self._lock = threading.Lock()  # a conversation's lists are extended in place

    def convert(self, messages: Sequence[ChatMessage], null_content: bool) -> list[dict[str, Any]]:
        """The wire form of ``messages`` (a new list; its dicts may be shared)."""
        if not messages:
            return []
        key = messages[0].id
        with self._lock:
            kept = self._last.get(key)
            if kept is not None and kept[2] is null_content and starts_with(messages, kept[0]):
                source, wire = kept[0], kept[1]
            else:
                source, wire = [], []
            for m in messages[len(source) :]:
                wire.append(self._one(m, null_content))
                source.append(m)
            self._last.put(key, (source, wire, null_content))
            return list(wire)

    def _one(self, message: ChatMessage, null_content: bool) -> dict[str, Any]:
        hit = self._wire.get(message.id)
        if hit is not None and hit[0] is message and hit[1] is null_content:
            return hit[2]
        wire = _to_openai(message, null_content)
        self._wire.put(message.id, (message, null_content, wire))
        return wire


def _to_openai(m: ChatMessage, null_content: bool) -> dict[str, Any]:
    if m.role == "assistant":
        return _assistant(m, null_content)
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": tool_result_text(m)}
    return {"role": m.role, "content": m.content}


def messages_to_openai(
    messages: Sequence[ChatMessage], *, null_content: bool = True, cache: WireCache | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` of a chat-completions request.

    ``null_content``: an assistant message with tool calls and no text is sent with
    ``content: null`` (what OpenAI documents); when False, with ``""`` (for servers that
    reject null, such as llama-cpp-python's). Reasoning is not sent back. ``cache``: the
    wire form of messages sent before is taken from it, that of new ones put in it.
    """
    if cache is None:
        return [_to_openai(m, null_content) for m in messages]
    return cache.convert(messages, null_content)


def tools_to_openai(
    tools: Sequence[ToolInfo], strict: StrictTools | None = None
) -> list[dict[str, Any]]:
    """The ``tools`` of a chat-completions request (in strict mode with ``strict``)."""
    if strict is not None:
        return [strict.function(t) for t in tools]
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return "required" if choice == "any" else choice
    return {"type": "function", "function": {"name": choice.name}}


def request_options(
    config: GenerateConfig,
    tools: Sequence[ToolInfo],
    *,
    max_tokens_param: str,
    schema_format: str = "json_schema",
    strict: StrictTools | None = None,
) -> dict[str, Any]:
    """The request fields ``config`` sets (model and messages aside).

    ``schema_format``: how ``response_schema`` is sent: ``json_schema`` (OpenAI's
    ``response_format``), or ``json_object`` with a ``schema`` (llama-cpp-python's).
    ``strict``: send the tools in strict mode.
    """
    opts: dict[str, Any] = {}
    if tools:
        opts["tools"] = tools_to_openai(tools, strict)
        if config.tool_choice is not None:
            opts["tool_choice"] = _tool_choice(config.tool_choice)
        if config.parallel_tool_calls is not None:
            opts["parallel_tool_calls"] = config.parallel_tool_calls
    if config.temperature is not None:
        opts["temperature"] = config.temperature
    if config.top_p is not None:
        opts["top_p"] = config.top_p
    if config.max_tokens is not None:
        opts[max_tokens_param] = config.max_tokens
    if config.stop_seqs:
        opts["stop"] = list(config.stop_seqs)
    if config.seed is not None:
        opts["seed"] = config.seed
    if config.response_schema is not None:
        if schema_format == "json_object":
            opts["response_format"] = {"type": "json_object", "schema": config.response_schema}
        else:
            opts["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": config.response_schema},
            }
    if config.extra_body:
        opts["extra_body"] = dict(config.extra_body)
    return opts


def _usage(usage: Any) -> Usage | None:
    """The usage of a reply; None when it has none, or counts that are none (see
    :mod:`._tokens`)."""
    if usage is None:
        return None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    try:
        prompt = token_count(getattr(usage, "prompt_tokens", None))
        completion = token_count(getattr(usage, "completion_tokens", None))
        total = token_count(getattr(usage, "total_tokens", None)) or prompt + completion
        cached = optional_count(getattr(prompt_details, "cached_tokens", None))
        reasoning = optional_count(getattr(completion_details, "reasoning_tokens", None))
    except ValueError:
        return None
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=total,
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )


def output_from_openai(response: Any, tools: Sequence[ToolInfo], model: str) -> ModelOutput | None:
    """The :class:`ModelOutput` of a chat completion; None when it has no choice."""
    choices = getattr(response, "choices", None)
    if not choices:
        return None
    choice = choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    for tc in getattr(message, "tool_calls", None) or []:
        function = getattr(tc, "function", None)
        if function is None:  # a non-function (custom) tool call: not ours to run
            continue
        calls.append(make_tool_call(tc.id, function.name, function.arguments, tools))
    legacy = getattr(message, "function_call", None)
    if legacy is not None and not calls:
        calls.append(make_tool_call(None, legacy.name, legacy.arguments, tools))
    text = message.content or ""
    refusal = getattr(message, "refusal", None)
    if refusal and not text:
        text = refusal
    text = valid_text(text)
    # servers that expose their thinking (vLLM, DeepSeek...) put it in an extra field
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    finish = getattr(choice, "finish_reason", None)
    stop: StopReason = FINISH_REASONS.get(finish or "", "unknown")
    if refusal and stop == "stop":
        stop = "content_filter"
    if calls and stop == "stop":
        stop = "tool_calls"  # some compatible servers say "stop" after tool calls
    return ModelOutput(
        message=AssistantMessage(
            content=text,
            tool_calls=calls,
            reasoning=valid_text(reasoning) if isinstance(reasoning, str) and reasoning else None,
            model=model,
        ),
        stop_reason=stop,
        usage=_usage(getattr(response, "usage", None)),
        model=model,
    )


class ChunkAssembler:
    """Puts a streamed chat completion back together, chunk by chunk.

    Per chunk the work is bounded by the chunk (pieces are appended and joined once at
    the end; the SDK's own accumulator re-parses a tool call's partial arguments on
    every delta). Tool-call pieces are kept by their ``index``, so parallel calls whose
    argument deltas interleave are assembled apart. Only choice 0 is read. The usage
    comes from whichever chunk carries it (the last, with ``include_usage``).

    ``limit``: once the text, the reasoning, the refusal or the tool calls (their
    arguments, ids and names) are longer than this many characters, the reply is
    :attr:`full`: the caller stops reading, and the output says ``max_tokens`` (a
    server streaming without end would otherwise fill the memory until the deadline).
    """

    __slots__ = ("_calls", "_reasoning", "_refusal", "_sizes", "_text", "finish", "limit", "usage")

    def __init__(self, limit: int | None = None) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        # index -> [id, name, argument pieces]
        self._calls: dict[int, list[Any]] = {}
        self._sizes = [0, 0, 0, 0]  # characters of text, reasoning, refusal, tool calls
        self.limit = limit
        self.finish: str | None = None
        """The finish reason, once a chunk said it (None: the reply is not complete)."""
        self.usage: Any = None

    @property
    def full(self) -> bool:
        """Whether a part of the reply is longer than ``limit`` characters."""
        return self.limit is not None and max(self._sizes) > self.limit

    def add(self, chunk: Any) -> list[StreamDelta]:
        """Take one chunk; the text and reasoning deltas it carries."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        out: list[StreamDelta] = []
        for choice in getattr(chunk, "choices", None) or ():
            if (getattr(choice, "index", 0) or 0) != 0:
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                reasoning = getattr(delta, "reasoning_content", None) or getattr(
                    delta, "reasoning", None
                )
                if isinstance(reasoning, str) and reasoning:
                    self._reasoning.append(reasoning)
                    self._sizes[1] += len(reasoning)
                    out.append(ReasoningDelta(valid_text(reasoning)))
                content = getattr(delta, "content", None)
                if isinstance(content, str) and content:
                    self._text.append(content)
                    self._sizes[0] += len(content)
                    out.append(TextDelta(valid_text(content)))
                refusal = getattr(delta, "refusal", None)
                if isinstance(refusal, str) and refusal:
                    self._refusal.append(refusal)
                    self._sizes[2] += len(refusal)
                for tc in getattr(delta, "tool_calls", None) or ():
                    self._tool_delta(tc)
            finish = getattr(choice, "finish_reason", None)
            if finish:
                self.finish = finish
        return out

    def _tool_delta(self, tc: Any) -> None:
        index = getattr(tc, "index", None)
        index = index if isinstance(index, int) else 0
        entry = self._calls.get(index)
        if entry is None:
            entry = self._calls[index] = [None, None, []]
            self._sizes[3] += 1
        if getattr(tc, "id", None):
            entry[0] = tc.id
            self._sizes[3] += len(str(tc.id))
        function = getattr(tc, "function", None)
        if function is None:
            return
        name = getattr(function, "name", None)
        if name and entry[1] is None:
            entry[1] = name
            self._sizes[3] += len(str(name))
        arguments = getattr(function, "arguments", None)
        if arguments:
            entry[2].append(arguments)
            self._sizes[3] += len(arguments)

    def output(self, tools: Sequence[ToolInfo], model: str) -> ModelOutput | None:
        """The complete output; None while no chunk has said how the reply finished.
        A :attr:`full` reply is complete, cut: its finish reason is ``length``."""
        if self.full:
            self.finish = "length"
        if self.finish is None:
            return None
        calls = [
            SimpleNamespace(
                id=id_,
                function=SimpleNamespace(name=name or "", arguments="".join(pieces)),
            )
            for _, (id_, name, pieces) in sorted(self._calls.items())
        ]
        message = SimpleNamespace(
            content="".join(self._text),
            tool_calls=calls,
            function_call=None,
            refusal="".join(self._refusal) or None,
            reasoning_content="".join(self._reasoning) or None,
        )
        response = SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason=self.finish)],
            usage=self.usage,
        )
        return output_from_openai(response, tools, model)
