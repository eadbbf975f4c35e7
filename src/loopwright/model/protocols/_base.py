"""The tool-protocol interface: how tools reach a model, and how its reply comes back."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from .._chat import AssistantMessage, ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput

__all__ = [
    "FORMAT_ERROR_FUNCTION",
    "NativeProtocol",
    "ProtocolName",
    "ProtocolRequest",
    "ToolProtocol",
    "is_format_error",
]

ProtocolName: TypeAlias = Literal["native", "react", "json"]

FORMAT_ERROR_FUNCTION = "format_error"
"""The ``ToolCall.function`` that runs recorded by earlier versions used for a reply that
named no tool and could not be parsed (it is never executed). Such a reply is now an
assistant message with ``format_error`` set and no tool calls."""


@dataclass(frozen=True, slots=True)
class ProtocolRequest:
    """What the provider is sent, as a protocol rendered it.

    Attributes:
        messages: The messages the provider sees.
        tools: The tools sent natively (none for text protocols).
        config: The settings of the request (stop sequences, response schema...).
        state: The protocol's own data, handed back to :meth:`ToolProtocol.parse`.
    """

    messages: Sequence[ChatMessage]
    tools: Sequence[ToolInfo]
    config: GenerateConfig
    state: Any = None


class ToolProtocol(abc.ABC):
    """How tools reach a model: render the request, parse the reply.

    ``Model.generate`` calls :meth:`render` before the provider call and :meth:`parse`
    after it, so the agent loop sees the same :class:`AssistantMessage` with
    ``tool_calls`` whichever protocol is in use. A reply that cannot be parsed must not
    raise: a call of a named tool whose arguments cannot be read becomes a
    :class:`~loopwright.ToolCall` with ``parse_error`` set, which the tool layer reports
    back to the model; a reply that names no tool at all keeps its text, with no tool
    calls, and sets ``AssistantMessage.format_error``, which the agent loop sends back as
    a user message (see :func:`is_format_error`).

    Implementations must keep per-call work proportional to the new messages (cache
    renderings by message id) and keep the rendering of earlier messages identical from
    call to call (providers reuse a cached prompt prefix).
    """

    name: ClassVar[str] = ""
    """The protocol's name (``native``, ``react``, ``json``)."""

    @abc.abstractmethod
    def render(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ProtocolRequest:
        """Turn the conversation, the tools and the settings into the provider's request."""

    @abc.abstractmethod
    def parse(self, output: ModelOutput, request: ProtocolRequest) -> ModelOutput:
        """Turn the provider's output for ``request`` into the loop's output."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NativeProtocol(ToolProtocol):
    """The provider's own tool calling: tools and messages pass through unchanged."""

    name = "native"

    def render(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ProtocolRequest:
        return ProtocolRequest(messages, tools, config)

    def parse(self, output: ModelOutput, request: ProtocolRequest) -> ModelOutput:
        return output


def is_format_error(output: ModelOutput | AssistantMessage) -> bool:
    """Whether a reply could not be read: a text protocol's ``format_error``, or tool
    calls none of which could be parsed (every one has ``parse_error`` set: bad
    arguments of a named tool, native arguments that are not JSON). Agent loops count
    consecutive format errors against a cap.
    """
    message = output.message if isinstance(output, ModelOutput) else output
    if message.format_error is not None:
        return True
    calls = message.tool_calls
    return bool(calls) and all(c.parse_error is not None for c in calls)
