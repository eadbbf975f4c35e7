"""The events of a transcript: slotted dataclasses, a discriminated union on ``event``.

They are plain dataclasses, not pydantic models (a live agent holds every event of its
run: a slotted one is a third of the size, and is made without validation): the one
cached :func:`event_adapter` validates what comes from outside (a run store's rows) and
dumps them as JSON, as pydantic-ai does with its messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeAlias

from pydantic import Field, JsonValue

from .._ids import new_id
from ..model import (
    GenerateConfig,
    ModelOutput,
    ToolCall,
    ToolCallError,
    ToolInfo,
    ToolMessage,
    Usage,
)
from ..model._output import message_or_ref
from ..tools._approval import Approval, ApprovalDecision

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "NO_EVENTS",
    "ApprovalEvent",
    "BaseEvent",
    "ErrorEvent",
    "Event",
    "InfoEvent",
    "LimitEvent",
    "LoggerEvent",
    "ModelEvent",
    "SandboxEvent",
    "SpanBegin",
    "SpanEnd",
    "StoreEvent",
    "SubtaskEvent",
    "ToolEvent",
    "event_adapter",
    "event_data",
]


def _now() -> datetime:
    return datetime.now(UTC)


def _refuse(self: _NoEvents, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        "nothing was recorded within this tool call: its events are one empty list shared "
        "by all such calls; record events within the call (Transcript.record), or set "
        "event.events to a list of its own"
    )


class _NoEvents(list[Any]):
    """An empty list that refuses changes; a copy of it (``copy``, ``pickle``,
    ``list(...)``) is a plain list."""

    __slots__ = ()

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[type[list[Any]], tuple[()]]:
        return list, ()


NO_EVENTS: list[Any] = _NoEvents()
"""The ``events`` of a tool call recorded by the transcript's hook until an event is
recorded within the call, when the transcript gives the call a list of its own: one empty
list shared by all such calls (a live run keeps every call's event; most calls record
nothing within), which reads as ``[]``, is written as ``[]`` and refuses changes."""


@dataclass(slots=True, kw_only=True)
class BaseEvent:
    """What every event has.

    Attributes:
        id: Unique id of the event. Spans, tool calls and subtasks use theirs as the
            ``span_id`` of the events within them.
        timestamp: When the event began (UTC).
        span_id: The id of the innermost span, tool call or subtask the event happened
            in; ``None`` at the top level of a run (or sample).
        working_start: The run's working time when the event began: seconds since the
            run began, minus time spent waiting for retries and connection slots.
    """

    id: str = field(default_factory=new_id)
    timestamp: datetime = field(default_factory=_now)
    span_id: str | None = None
    working_start: float = 0.0


@dataclass(slots=True, kw_only=True)
class ModelEvent(BaseEvent):
    """One model call (``Model.generate``), with its retries.

    The input messages are referenced by id, and only the part not shared with an
    earlier call is listed: the full input is the first ``input_base_count`` messages of
    the input of event ``input_base`` followed by ``input``. (A 1,000-step run's log
    thus grows linearly.) ``Transcript.model_input(event)`` and
    ``RunLog.model_input(event)`` give the full list of messages.

    Attributes:
        model: The model's name (``provider/model``).
        input: Ids of the input messages after the shared prefix.
        input_base: The earlier ModelEvent whose input starts this one's, or ``None``.
        input_base_count: How many messages of ``input_base``'s input come first.
        tools: The tools offered (for ``Model.generate``'s calls, a list shared by the
            calls that offered the same tools, which refuses changes: change a copy).
        config: The merged generation config.
        output: The output (``None`` while pending or after a failure).
        usage: Tokens used.
        cost: Dollars the call cost (``lw.cost_of(output.model, usage)``); ``None`` when
            the answering model's price (or the usage) is not known, never 0 for that.
        retries: Retries made (the fallbacks' included).
        fallbacks: When the model failed and a fallback answered
            (``output.model`` names it): each model that failed, with why
            (``"openai/gpt-4o: HTTP 500 ..."``), in the order tried.
        error: Why the call failed (``Type: message``), if it did: the model's
            secrets and anything shaped like one redacted, cut to about 16,000
            characters (``model/_redact.py``: ``error_summary``).
        duration: Seconds from start to end, waits included.
        wait_time: Seconds spent waiting (retry backoff, connection slots).
        working_time: ``duration - wait_time``.
        pending: ``True`` while the call is in flight.
        step: ``True`` for an agent loop's own call for its next action (not a history
            policy's summary, nor a hook's or a tool's call): a resume goes on from the
            last one (``None``: any other call, or one recorded before the mark).
    """

    event: Literal["model"] = "model"
    model: str
    input: list[str] = field(default_factory=list)
    input_base: str | None = None
    input_base_count: int = 0
    tools: list[ToolInfo] = field(default_factory=list)
    config: GenerateConfig = field(default_factory=GenerateConfig)
    output: ModelOutput | None = None
    usage: Usage | None = None
    cost: float | None = None
    retries: int = 0
    fallbacks: list[str] | None = None
    error: str | None = None
    duration: float = 0.0
    wait_time: float = 0.0
    working_time: float = 0.0
    pending: bool | None = None
    step: bool | None = None


@dataclass(slots=True, kw_only=True)
class ToolEvent(BaseEvent):
    """One tool call, with the events that happened during it (e.g. a sub-agent's).

    Attributes:
        call: The call as executed (after any approval modification); ``function`` and
            ``arguments`` are its name and arguments.
        result: The tool message returned to the model (``None`` while pending, or when
            the call raised). Written as ``{"$ref": id}`` in the run store's rows
            (``model/_output.py``: ``message_or_ref``), as the message elsewhere.
        error: The expected failure reported to the model, if any.
        failure: An exception that propagated out of the call (``Type: message``): a
            bug in the tool, a termination by an approval policy, a cancellation. The
            conversation then answers the call with a placeholder ("Not run..."): this
            says what really happened.
        traceback: The traceback of ``failure`` when the tool raised an error (not for
            a cancellation or a termination). Both are cut to about 16,000 characters
            (the traceback keeps its first and last frames).
        truncated: Whether the output was cut to the output limit.
        approval: The approval policy's answer, when one was asked.
        duration: Seconds the call took, approval included.
        working_time: The duration minus the time spent waiting for approval.
        events: Events within the call, in order. For a call the transcript's tool hook
            recorded, and within which nothing was recorded, the shared empty
            :data:`NO_EVENTS`, which refuses changes: an event recorded within the call
            (``Transcript.record()`` during it) gives the call a list of its own.
        pending: ``True`` while the call is in flight.
    """

    event: Literal["tool"] = "tool"
    call: ToolCall
    result: Annotated[ToolMessage, message_or_ref] | None = None
    error: ToolCallError | None = None
    failure: str | None = None
    traceback: str | None = None
    truncated: bool = False
    approval: Approval | None = None
    duration: float = 0.0
    working_time: float = 0.0
    events: list[Event] = field(default_factory=list)
    pending: bool | None = None

    @property
    def function(self) -> str:
        """The tool's name."""
        return self.call.function

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments it was called with."""
        return self.call.arguments


@dataclass(slots=True, kw_only=True)
class StoreEvent(BaseEvent):
    """Changes to a store since the previous checkpoint, as an RFC 6902 JSON patch.

    Attributes:
        store: The id of the store changed (a run's, or a subtask's).
        changes: The patch operations.
    """

    event: Literal["store"] = "store"
    store: str | None = None
    changes: list[dict[str, Any]]


@dataclass(slots=True, kw_only=True)
class InfoEvent(BaseEvent):
    """Something the agent's author chose to record (``transcript().info(data)``).

    Attributes:
        source: Who recorded it.
        data: A (markdown) string or any JSON data.
    """

    event: Literal["info"] = "info"
    source: str | None = None
    data: JsonValue = None


@dataclass(slots=True, kw_only=True)
class SpanBegin(BaseEvent):
    """The start of a span (``with span("name"):``); its ``id`` is the span's id.

    Attributes:
        name: The span's name.
        type: A kind of span (free-form, e.g. ``"agent"``, ``"step"``).
    """

    event: Literal["span_begin"] = "span_begin"
    name: str
    type: str | None = None


@dataclass(slots=True, kw_only=True)
class SpanEnd(BaseEvent):
    """The end of a span.

    Attributes:
        begin: The id of the span's :class:`SpanBegin`.
        error: The exception that left the span, if one did.
    """

    event: Literal["span_end"] = "span_end"
    begin: str
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class SubtaskEvent(BaseEvent):
    """A subtask (``@subtask`` or a ``fork`` branch) and the events of its own transcript.

    Attributes:
        name: The subtask's name.
        type: ``"subtask"`` or ``"fork"``.
        input: Its arguments (as JSON).
        result: What it returned (as JSON), once done.
        error: The exception it raised, if any.
        events: The events of its transcript.
        duration: Seconds it took.
        working_time: Seconds of work.
        pending: ``True`` while it runs.
    """

    event: Literal["subtask"] = "subtask"
    name: str
    type: str = "subtask"
    input: dict[str, JsonValue] = field(default_factory=dict)
    result: JsonValue = None
    error: str | None = None
    events: list[Event] = field(default_factory=list)
    duration: float = 0.0
    working_time: float = 0.0
    pending: bool | None = None


@dataclass(slots=True, kw_only=True)
class LoggerEvent(BaseEvent):
    """A Python ``logging`` record captured during the run.

    Attributes:
        level: ``DEBUG``, ``INFO``, ``WARNING``, ``ERROR`` or ``CRITICAL`` (``Level 35``
            for a level without a name).
        levelno: The level's number (``None`` in records from before it was kept).
        logger: The logger's name.
        message: The formatted message (with the traceback, if one was logged).
        filename: The source file.
        lineno: The source line.
    """

    event: Literal["logger"] = "logger"
    level: str
    levelno: int | None = None
    logger: str
    message: str
    filename: str | None = None
    lineno: int | None = None


@dataclass(slots=True, kw_only=True)
class LimitEvent(BaseEvent):
    """A limit was reached.

    Attributes:
        type: Which limit (``step``, ``message``, ``token``, ``time``, ``working``...).
        limit: The limit's value.
        value: Where the count stood.
        message: What happened, in words.
    """

    event: Literal["limit"] = "limit"
    type: str
    limit: float | None = None
    value: float | None = None
    message: str = ""


@dataclass(slots=True, kw_only=True)
class ErrorEvent(BaseEvent):
    """An error ended the run (or a sample).

    Attributes:
        error: The exception's type.
        message: Its message, secrets redacted, cut to about 16,000 characters.
        traceback: The formatted traceback, the same way (its last lines kept).
    """

    event: Literal["error"] = "error"
    error: str
    message: str
    traceback: str | None = None


@dataclass(slots=True, kw_only=True)
class SandboxEvent(BaseEvent):
    """A sandbox operation.

    Attributes:
        action: ``exec``, ``read_file`` or ``write_file``.
        cmd: The command run (``exec``).
        file: The file read or written.
        input: Text given to the command or written (abbreviated).
        result: The exit code (``exec``).
        output: What came back (abbreviated).
        duration: Seconds it took.
    """

    event: Literal["sandbox"] = "sandbox"
    action: Literal["exec", "read_file", "write_file"]
    cmd: list[str] | str | None = None
    file: str | None = None
    input: str | None = None
    result: int | None = None
    output: str | None = None
    duration: float = 0.0


@dataclass(slots=True, kw_only=True)
class ApprovalEvent(BaseEvent):
    """An approval policy's decision about a tool call.

    Attributes:
        call: The call asked about.
        decision: ``approve``, ``modify``, ``reject``, ``escalate`` or ``terminate``.
        approver: The policy that decided.
        explanation: Why.
        modified: The call run instead, with ``modify``.
    """

    event: Literal["approval"] = "approval"
    call: ToolCall
    decision: ApprovalDecision
    approver: str | None = None
    explanation: str | None = None
    modified: ToolCall | None = None


Event: TypeAlias = Annotated[
    ModelEvent
    | ToolEvent
    | StoreEvent
    | InfoEvent
    | SpanBegin
    | SpanEnd
    | SubtaskEvent
    | LoggerEvent
    | LimitEvent
    | ErrorEvent
    | SandboxEvent
    | ApprovalEvent,
    Field(discriminator="event"),
]
"""Any transcript event; a discriminated union on ``event`` (validated and dumped by
:func:`event_adapter`)."""

_adapter: TypeAdapter[Event] | None = None


def event_adapter() -> TypeAdapter[Event]:
    """A (cached) ``TypeAdapter`` that validates and dumps any :data:`Event`."""
    global _adapter
    if _adapter is None:
        from pydantic import TypeAdapter

        _adapter = TypeAdapter(Event)
    return _adapter


def event_data(event: Event, *, exclude: set[str] | dict[str, Any] | None = None) -> dict[str, Any]:
    """``event`` as JSON data, without its ``None`` fields (and those in ``exclude``, a
    set of names or pydantic's nested form): what the run store and the viewer hold.
    ``event_adapter().validate_python(data)`` makes an equal event again.

    Raises:
        pydantic_core.PydanticSerializationError: A field holds a value that is not of
            its type (an event is not validated when it is made): refused here, where
            it would be written, rather than written as something that does not read back.
    """
    data: dict[str, Any] = event_adapter().dump_python(
        event, mode="json", exclude_none=True, exclude=exclude, warnings="error"
    )
    return data
