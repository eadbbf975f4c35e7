"""What a model call returns: the message, why it stopped, and what it cost."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from .._ids import new_id
from ._chat import AssistantMessage, ToolCall

__all__ = ["ModelOutput", "StopReason", "Usage"]

StopReason: TypeAlias = Literal[
    "stop", "max_tokens", "model_length", "tool_calls", "content_filter", "unknown"
]
"""Why the model stopped generating.

- ``stop``: it finished (or hit a stop sequence);
- ``max_tokens``: it reached the ``max_tokens`` of the request;
- ``model_length``: the context window is full (the loop recovers by pruning history);
- ``tool_calls``: it wants tools called;
- ``content_filter``: the provider filtered the output;
- ``unknown``: the provider said nothing we understand.
"""


class Usage(BaseModel):
    """Tokens used by one or more model calls; usages add up with ``+`` and ``sum()``."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        a, b = self.__dict__, other.__dict__
        values = {
            "input_tokens": a["input_tokens"] + b["input_tokens"],
            "output_tokens": a["output_tokens"] + b["output_tokens"],
            "total_tokens": a["total_tokens"] + b["total_tokens"],
        }
        for name in _OPTIONAL_TOKENS:  # None + None stays None: "not reported"
            x, y = a[name], b[name]
            if x is not None or y is not None:
                values[name] = (x or 0) + (y or 0)
        return Usage(**values)

    def __radd__(self, other: Any) -> Usage:
        # sum() starts from 0
        if other == 0:
            return self
        if isinstance(other, Usage):
            return other + self
        return NotImplemented


_OPTIONAL_TOKENS = ("reasoning_tokens", "cache_read_tokens", "cache_write_tokens")


class ModelOutput(BaseModel):
    """The result of one model call.

    Attributes:
        message: The assistant message (text and tool calls).
        stop_reason: Why generation stopped.
        usage: Tokens used, when known.
        model: The model that answered.
        time: Seconds the call took (the successful attempt, without waits).
        error: An error the provider reported alongside a (partial) output.
    """

    model_config = ConfigDict(defer_build=True)

    message: AssistantMessage = Field(default_factory=AssistantMessage)
    stop_reason: StopReason = "stop"
    usage: Usage | None = None
    model: str = ""
    time: float | None = None
    error: str | None = None

    @property
    def text(self) -> str:
        """The text of the message."""
        return self.message.content

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls of the message."""
        return self.message.tool_calls

    @classmethod
    def from_text(
        cls,
        text: str,
        *,
        model: str = "",
        stop_reason: StopReason = "stop",
        reasoning: str | None = None,
        usage: Usage | None = None,
    ) -> ModelOutput:
        """An output whose message is plain text."""
        return cls(
            message=AssistantMessage(content=text, reasoning=reasoning, model=model or None),
            stop_reason=stop_reason,
            model=model,
            usage=usage,
        )

    @classmethod
    def for_tool_call(
        cls,
        function: str,
        arguments: dict[str, Any] | None = None,
        *,
        tool_call_id: str | None = None,
        content: str = "",
        model: str = "",
        usage: Usage | None = None,
    ) -> ModelOutput:
        """An output whose message asks for one tool call."""
        call = ToolCall(id=tool_call_id or new_id(), function=function, arguments=arguments or {})
        return cls(
            message=AssistantMessage(content=content, tool_calls=[call], model=model or None),
            stop_reason="tool_calls",
            model=model,
            usage=usage,
        )
