"""Chat messages, tool calls and tool descriptions: what flows between agents and models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from .._ids import new_id

__all__ = [
    "AssistantMessage",
    "ChatMessage",
    "SystemMessage",
    "ToolCall",
    "ToolCallError",
    "ToolCallErrorType",
    "ToolInfo",
    "ToolMessage",
    "UserMessage",
]


class ToolCall(BaseModel):
    """A call of a tool requested by the model.

    Attributes:
        id: The call's identifier; the matching :class:`ToolMessage` carries it back.
        function: The name of the tool to call.
        arguments: The arguments, parsed from the model's output.
        parse_error: Set when the model's arguments could not be parsed; the call is then
            not executed and the model is told what was wrong.
    """

    model_config = ConfigDict(defer_build=True)

    id: str = Field(default_factory=new_id)
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    parse_error: str | None = None


class ToolInfo(BaseModel):
    """A tool as a model sees it: a name, a description and a JSON schema of parameters.

    Attributes:
        name: The tool's name.
        description: What the tool does, for the model.
        parameters: A JSON-Schema object (``type: object``) describing the arguments.
    """

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )


ToolCallErrorType: TypeAlias = Literal[
    "unknown_tool",
    "parsing",
    "validation",
    "tool_error",
    "timeout",
    "permission",
    "file_not_found",
    "output_limit",
    "approval",
    "limit",
]


class ToolCallError(BaseModel):
    """An expected failure of a tool call, reported back to the model.

    Attributes:
        type: What kind of failure it was.
        message: What went wrong, written for the model to act on.
    """

    model_config = ConfigDict(defer_build=True)

    type: ToolCallErrorType
    message: str


class _Message(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str = Field(default_factory=new_id)
    """A stable identifier; the run store saves each message once under it."""

    content: str = ""
    """The text of the message."""

    @property
    def text(self) -> str:
        """The text of the message."""
        return self.content

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A changed copy is a new message: it gets a new id unless ``update`` names one
        (messages are frozen values, saved and cached once by their id)."""
        if update and "id" not in update:
            update = {**update, "id": new_id()}
        return super().model_copy(update=update, deep=deep)


class SystemMessage(_Message):
    """Instructions for the model."""

    role: Literal["system"] = "system"


class UserMessage(_Message):
    """A message from the user (or from the agent's harness acting as the user)."""

    role: Literal["user"] = "user"


class AssistantMessage(_Message):
    """A message from the model: text, optional reasoning, and the tools it wants called.

    Attributes:
        tool_calls: The tool calls requested, in the order the model asked for them.
        reasoning: The model's visible thoughts (e.g. a ReAct ``Thought:``), kept apart
            from the answer text.
        model: The model that wrote it.
        format_error: Set when a text tool protocol could not read the reply as an
            action or an answer: what was wrong and the format expected. The message
            then keeps the text as the model wrote it, with no tool calls, and the agent
            loop sends this back to the model as a user message.
    """

    role: Literal["assistant"] = "assistant"
    tool_calls: list[ToolCall] = Field(default_factory=list)
    reasoning: str | None = None
    model: str | None = None
    format_error: str | None = None


class ToolMessage(_Message):
    """The result of one tool call.

    Attributes:
        tool_call_id: The id of the :class:`ToolCall` this answers.
        function: The tool that was called.
        error: Set when the call failed in an expected way; ``content`` then holds what
            the model should read.
    """

    role: Literal["tool"] = "tool"
    tool_call_id: str
    function: str
    error: ToolCallError | None = None


ChatMessage: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]
"""Any chat message; a pydantic discriminated union on ``role``."""
