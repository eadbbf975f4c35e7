"""Transcripts: the typed record of everything a run does.

``transcript()`` is the current run's transcript; model calls, tool calls, store changes,
spans, subtasks and log records land in it on their own, and ``transcript().info(x)``
adds your own entries. See :class:`Transcript` and the event types.
"""

from ._context import (
    checkpoint_store,
    current_transcript,
    observe_transcripts,
    on_transcript_open,
    transcript,
    transcript_context,
)
from ._events import (
    ApprovalEvent,
    BaseEvent,
    ErrorEvent,
    Event,
    InfoEvent,
    LimitEvent,
    LoggerEvent,
    ModelEvent,
    SandboxEvent,
    SpanBegin,
    SpanEnd,
    StoreEvent,
    SubtaskEvent,
    ToolEvent,
    event_adapter,
    event_data,
)
from ._span import span
from ._subtask import run_subtask, subtask
from ._transcript import EventSubscriber, MessageSubscriber, Transcript

__all__ = [
    "ApprovalEvent",
    "BaseEvent",
    "ErrorEvent",
    "Event",
    "EventSubscriber",
    "InfoEvent",
    "LimitEvent",
    "LoggerEvent",
    "MessageSubscriber",
    "ModelEvent",
    "SandboxEvent",
    "SpanBegin",
    "SpanEnd",
    "StoreEvent",
    "SubtaskEvent",
    "ToolEvent",
    "Transcript",
    "checkpoint_store",
    "current_transcript",
    "event_adapter",
    "event_data",
    "observe_transcripts",
    "on_transcript_open",
    "run_subtask",
    "span",
    "subtask",
    "transcript",
    "transcript_context",
]
