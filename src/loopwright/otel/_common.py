"""What the span builder shares: options, times, errors as OpenTelemetry has them, and
values as OTLP can carry them.

Every value a span gets comes from a run (a model, a tool, a dataset, a run store that
may be foreign or damaged): it goes through :func:`clean` (:func:`put` for an
attribute), so no secret the run store redacts reaches an exporter, and no value makes
the OTLP encoder fail (a lone surrogate in a span's name fails the whole batch).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Status, StatusCode

from ..model.providers._wire_text import valid_text
from ..transcripts import (
    ApprovalEvent,
    InfoEvent,
    LimitEvent,
    LoggerEvent,
    ModelEvent,
    SandboxEvent,
)
from . import _attributes as a

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = [
    "Options",
    "before_ns",
    "chat_request",
    "chat_result",
    "clean",
    "clean_as",
    "cleaned",
    "end_ns",
    "error_kind",
    "note",
    "ns",
    "put",
    "sandbox_attributes",
    "set_error",
    "text",
]

MAX_NS = 2**64 - 1
"""The latest time OTLP carries (a fixed64 of nanoseconds since the epoch)."""
_MAX_SECONDS = MAX_NS / 1e9
_INT64 = 2**63
MAX_MESSAGE = 16_000
"""The most characters of an error's message and of its stack trace."""


def _ns(seconds: float) -> int:
    """Seconds as nanoseconds within 0 and :data:`MAX_NS` (``NaN``: 0)."""
    if not seconds > 0:
        return 0
    return MAX_NS if seconds >= _MAX_SECONDS else min(int(seconds * 1e9), MAX_NS)


def ns(when: datetime) -> int:
    """A datetime as OpenTelemetry's nanoseconds since the epoch, within what OTLP
    carries (a foreign row's year 1900 is the epoch, its year 9999 :data:`MAX_NS`)."""
    return _ns(when.timestamp())


def end_ns(start: datetime, seconds: float) -> int:
    """``seconds`` after ``start``; a duration that is negative or not finite (a
    damaged row's ``NaN``) is none."""
    return min(ns(start) + _ns(seconds), MAX_NS)


def before_ns(end: int, seconds: float) -> int:
    """``seconds`` before ``end`` (nanoseconds), as :func:`end_ns` counts them."""
    return max(end - _ns(seconds), 0)


def text(value: str) -> str:
    """``value`` as an exporter may have it: every secret learnt redacted (as plain
    text and as JSON writes it, as the run store does, ``model/_redact.py``) and each
    lone surrogate (no UTF-8 form) replaced by U+FFFD."""
    return valid_text(a.redacted(value))


def clean(value: Any) -> Any:
    """An attribute's value as OTLP carries it: text through :func:`text`, an integer
    within 64 bits (clamped), a sequence item by item."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-_INT64, min(value, _INT64 - 1))
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def clean_as(key: str, value: Any) -> Any:
    """An attribute's value through :func:`clean`, or :func:`~._attributes.label` for
    a name or id (:data:`~._attributes.LABELS`)."""
    if key in a.LABELS and isinstance(value, str):
        return a.label(value)
    return clean(value)


def cleaned(attributes: dict[str, Any]) -> dict[str, Any]:
    """Every value of ``attributes`` through :func:`clean_as`."""
    return {k: clean_as(k, v) for k, v in attributes.items()}


def put(span: Span, key: str, value: Any) -> None:
    """``span.set_attribute(key, value)``, the value through :func:`clean_as`."""
    span.set_attribute(key, clean_as(key, value))


class Options:
    """What a builder records beyond the structure: ``contents`` (messages, arguments,
    results, log messages...) and the bound on each content value, in characters."""

    __slots__ = ("contents", "max_content")

    def __init__(self, *, contents: bool = False, max_content: int = 16_000) -> None:
        self.contents = contents
        self.max_content = max_content


def set_error(span: Span, kind: str, message: str, stacktrace: str | None = None) -> None:
    """An error on ``span``: the error status, ``error.type`` and an exception event."""
    kind, message = a.label(kind), text(a.bounded(message, MAX_MESSAGE))
    attributes = {"exception.type": kind, "exception.message": message}
    if stacktrace:
        attributes["exception.stacktrace"] = text(a.bounded(stacktrace, MAX_MESSAGE))
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
    ev: InfoEvent | LoggerEvent | ApprovalEvent | LimitEvent, contents: bool, limit: int
) -> tuple[str, dict[str, Any]]:
    """The span event an info, log record, approval or limit becomes: its name and
    attributes (what was said only with ``contents``; a limit's message always)."""
    attributes: dict[str, Any]
    if isinstance(ev, LimitEvent):
        name, attributes = "loopwright.limit", {"loopwright.limit.type": ev.type}
        attributes["message"] = ev.message
        if ev.limit is not None:
            attributes["loopwright.limit.limit"] = ev.limit
        if ev.value is not None:
            attributes["loopwright.limit.value"] = ev.value
    elif isinstance(ev, InfoEvent):
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


def chat_request(ev: ModelEvent) -> tuple[str, dict[str, Any]]:
    """The name and attributes of a model call's ``chat`` span as it begins."""
    provider, model = a.split_model(ev.model)
    attributes: dict[str, Any] = {
        a.OPERATION: "chat",
        a.PROVIDER: provider,
        a.SYSTEM: provider,
        a.REQUEST_MODEL: model,
    }
    config = ev.config
    if config.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = config.max_tokens
    if config.temperature is not None:
        attributes["gen_ai.request.temperature"] = config.temperature
    if config.top_p is not None:
        attributes["gen_ai.request.top_p"] = config.top_p
    return f"chat {a.label(model)}", attributes


def chat_result(span: Span, ev: ModelEvent) -> None:
    """What a model call's ``chat`` span says when it is over (contents aside): its
    usage, retries, finish reason, the model that answered, its error."""
    usage, out = ev.usage, ev.output
    if usage is not None:
        put(span, a.INPUT_TOKENS, usage.input_tokens)
        put(span, a.OUTPUT_TOKENS, usage.output_tokens)
        if usage.cache_read_tokens is not None:
            put(span, "gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    if ev.retries:
        put(span, "loopwright.model.retries", ev.retries)
    if out is not None:
        put(span, a.FINISH_REASONS, [a.finish_reason(out.stop_reason)])
        if out.model:
            put(span, a.RESPONSE_MODEL, out.model)
    if ev.error is not None:
        kind, message = error_kind(ev.error)
        set_error(span, kind, message)


def sandbox_attributes(ev: SandboxEvent, options: Options) -> dict[str, Any]:
    """The attributes of a sandbox operation's span (the command, file and output only
    with ``contents``)."""
    attributes: dict[str, Any] = {"loopwright.sandbox.action": ev.action}
    if ev.result is not None:
        attributes["loopwright.sandbox.exit_code"] = ev.result
    if options.contents:
        limit = options.max_content
        if ev.cmd is not None:
            attributes["loopwright.sandbox.command"] = a.json_value(ev.cmd, limit)
        if ev.file is not None:
            attributes["loopwright.sandbox.file"] = a.bounded(ev.file, limit)
        if ev.output is not None:
            attributes["loopwright.sandbox.output"] = a.bounded(ev.output, limit)
    return attributes
