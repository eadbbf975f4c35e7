"""What a model call returns: the message, why it stopped, and what it cost.

``ModelOutput`` and ``Usage`` are slotted stdlib dataclasses, not pydantic models: a live
run keeps one of each per model call (its transcript's model events hold them), and a
slotted instance is a fifth of a pydantic one (bench/README.md, "Ten thousand agents").
pydantic models that hold them (``AgentState``, the transcript's events) validate and
serialise them as they do their own fields, and keep a given instance as it is (no
copy). A copy is ``dataclasses.replace(output, message=...)``. Data from outside (a
script, a stored row) becomes one through :func:`output_from_data` /
:func:`usage_from_json`, which validate it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import WrapSerializer

from .._errors import ModelError
from .._ids import new_id
from ._chat import AssistantMessage, ToolCall, ToolMessage

if TYPE_CHECKING:
    from pydantic import SerializationInfo, SerializerFunctionWrapHandler, TypeAdapter

__all__ = ["ModelOutput", "StopReason", "Usage", "output_from_data", "usage_from_json"]

MESSAGE_REFS: dict[str, Any] = {"message_refs": True}
"""The serialization ``context`` in which a message held by a model output or a tool
event is written as ``{"$ref": id}`` (the run store's rows, where messages are rows of
their own); any other dump writes the message itself."""


def _message_or_ref(
    message: AssistantMessage | ToolMessage,
    handler: SerializerFunctionWrapHandler,
    info: SerializationInfo,
) -> Any:
    if info.context is MESSAGE_REFS:  # (that object: a caller's own context is theirs)
        return {"$ref": message.id}
    return handler(message)


message_or_ref = WrapSerializer(_message_or_ref)
"""The serializer of a field holding a message: the message, or a reference to it in a
dump whose context is the object :data:`MESSAGE_REFS`."""

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


@dataclass(slots=True, kw_only=True)
class Usage:
    """Tokens used by one or more model calls; usages add up with ``+`` and ``sum()``."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=_plus(self.reasoning_tokens, other.reasoning_tokens),
            cache_read_tokens=_plus(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=_plus(self.cache_write_tokens, other.cache_write_tokens),
        )

    def __radd__(self, other: Any) -> Usage:
        # sum() starts from 0
        if other == 0:
            return self
        if isinstance(other, Usage):
            return other + self
        return NotImplemented


def _plus(x: int | None, y: int | None) -> int | None:
    # None + None stays None: "not reported"
    return None if x is None and y is None else (x or 0) + (y or 0)


@dataclass(slots=True, kw_only=True)
class ModelOutput:
    """The result of one model call.

    Attributes:
        message: The assistant message (text and tool calls).
        stop_reason: Why generation stopped.
        usage: Tokens used, when known.
        model: The model that answered.
        time: Seconds the call took (the successful attempt, without waits).
        error: An error the provider reported alongside a (partial) output.

    pydantic writes ``message`` as the message itself, except in a dump whose ``context``
    is :data:`MESSAGE_REFS` (the run store's rows): there as ``{"$ref": id}``, in its
    place (first). (So a serialization-mode JSON schema gives ``message`` no type.)
    """

    message: Annotated[AssistantMessage, message_or_ref] = field(default_factory=AssistantMessage)
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


@cache
def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def output_from_data(data: Any) -> ModelOutput:
    """A :class:`ModelOutput` from JSON-like data (a dict, as written by a run store or
    a script), validated; a ``ModelOutput`` is returned as it is.

    Raises:
        pydantic.ValidationError: ``data`` is not a model output.
    """
    output: ModelOutput = _adapter(ModelOutput).validate_python(data)
    return output


def usage_from_json(text: str | bytes) -> Usage:
    """A :class:`Usage` from its JSON text, validated.

    Raises:
        pydantic.ValidationError: ``text`` is not a usage.
    """
    usage: Usage = _adapter(Usage).validate_json(text)
    return usage


_STOP_REASONS = frozenset(get_args(StopReason))


def _counted(usage: object) -> bool:
    if type(usage) is not Usage:
        return False
    r, cr, cw = usage.reasoning_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    return (
        type(usage.input_tokens) is int
        and type(usage.output_tokens) is int
        and type(usage.total_tokens) is int
        and (r is None or type(r) is int)
        and (cr is None or type(cr) is int)
        and (cw is None or type(cw) is int)
    )


def checked_output(output: object) -> ModelOutput:
    """What a provider returned, checked to be a :class:`ModelOutput` of the right types
    (a dataclass is not validated when it is made, and a provider's output is outside
    data): ``Model.generate`` passes every provider's output through it. One that is of
    the right types is returned as it is (a few checks, no copy); one that pydantic can
    convert (token counts given as ``12.0``) is returned converted.

    Raises:
        ModelError: It is not a model output, or a field is not of its type (an
            unknown ``stop_reason``, a token count that is not a whole number...).
    """
    if (
        isinstance(output, ModelOutput)
        and isinstance(output.message, AssistantMessage)
        and output.stop_reason in _STOP_REASONS
        and type(output.model) is str
        and (output.error is None or type(output.error) is str)
        and (output.time is None or type(output.time) is float)  # (set by Model later)
        and (output.usage is None or _counted(output.usage))
    ):
        return output
    if not isinstance(output, ModelOutput):
        raise ModelError(f"the provider returned {type(output).__name__}, not a ModelOutput")
    data = {f.name: getattr(output, f.name) for f in fields(ModelOutput)}
    usage = data["usage"]
    if isinstance(usage, Usage):
        data["usage"] = asdict(usage)
    try:
        return output_from_data(data)
    except Exception as ex:  # pydantic's ValidationError, which names the fields
        raise ModelError(f"the provider returned an output that is not valid: {ex}") from ex
