"""What the span builder shares: options, times, errors as OpenTelemetry has them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Status, StatusCode

from ..transcripts import ApprovalEvent, InfoEvent, LoggerEvent
from . import _attributes as a

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["Options", "end_ns", "error_kind", "note", "ns", "set_error"]


def ns(when: datetime) -> int:
    """A datetime as OpenTelemetry's nanoseconds since the epoch."""
    return int(when.timestamp() * 1_000_000_000)


def end_ns(start: datetime, seconds: float) -> int:
    return ns(start) + int(seconds * 1_000_000_000)


class Options:
    """What a builder records beyond the structure: ``contents`` (messages, arguments,
    results, log messages...) and the bound on each content value, in characters."""

    __slots__ = ("contents", "max_content")

    def __init__(self, *, contents: bool = False, max_content: int = 16_000) -> None:
        self.contents = contents
        self.max_content = max_content


def set_error(span: Span, kind: str, message: str, stacktrace: str | None = None) -> None:
    """An error on ``span``: the error status, ``error.type`` and an exception event."""
    attributes = {"exception.type": kind, "exception.message": message}
    if stacktrace:
        attributes["exception.stacktrace"] = stacktrace
    span.add_event("exception", attributes)
    span.set_attribute(a.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, f"{kind}: {message}"[:1000]))


def error_kind(text: str) -> tuple[str, str]:
    """``Type: message`` (how loopwright records an exception) -> (type, message)."""
    kind, sep, message = text.partition(": ")
    if sep and kind.replace(".", "").replace("_", "").isalnum():
        return kind, message
    return "Error", text


def note(
    ev: InfoEvent | LoggerEvent | ApprovalEvent, contents: bool, limit: int
) -> tuple[str, dict[str, Any]]:
    """The span event an info, log record or approval becomes: its name and attributes
    (what was said only with ``contents``)."""
    attributes: dict[str, Any]
    if isinstance(ev, InfoEvent):
        name, attributes = "loopwright.info", {"source": ev.source or ""}
        if contents:
            attributes["data"] = a.json_value(ev.data, limit)
    elif isinstance(ev, LoggerEvent):
        name, attributes = "loopwright.log", {"level": ev.level, "logger": ev.logger}
        if contents:
            attributes["message"] = a.bounded(ev.message, limit)
    else:
        name = "loopwright.approval"
        attributes = {"decision": ev.decision, "approver": ev.approver or ""}
        attributes[a.TOOL_CALL_ID] = ev.call.id
        if contents and ev.explanation:
            attributes["explanation"] = a.bounded(ev.explanation, limit)
    return name, attributes
