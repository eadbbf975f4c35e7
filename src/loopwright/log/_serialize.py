"""Events and messages to and from the run store's JSON rows.

In the store, events refer to messages by id (``{"$ref": id}``) and hold no nested
events (those are rows of their own, pointing at their container with ``span_id``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import to_json

from ..model import AssistantMessage, ChatMessage, ToolMessage
from ..model._bounds import flat_call
from ..transcripts import Event, ModelEvent, SubtaskEvent, ToolEvent, event_adapter, event_data

__all__ = ["dump_event", "dump_message", "load_event", "load_message"]

_message_adapter: TypeAdapter[ChatMessage] | None = None


def _messages() -> TypeAdapter[ChatMessage]:
    global _message_adapter
    if _message_adapter is None:
        _message_adapter = TypeAdapter(ChatMessage)
    return _message_adapter


def dump_message(message: ChatMessage) -> str:
    """A message as the store's JSON."""
    try:
        return message.model_dump_json(exclude_none=True)
    except (ValueError, UnicodeError):  # e.g. a lone surrogate (os.fsdecode of a bad name)
        if isinstance(message, AssistantMessage):  # or arguments too deep: a placeholder
            calls = [flat_call(c) for c in message.tool_calls]
            message = message.model_copy(update={"tool_calls": calls, "id": message.id})
        data = message.model_dump(mode="json", exclude_none=True)
        return json.dumps(data, separators=(",", ":"))  # escapes it as \udcxx


def load_message(data: str | bytes) -> ChatMessage:
    """A message from the store's JSON."""
    try:
        return _messages().validate_json(data)
    except ValueError:  # pydantic's JSON parser refuses escaped lone surrogates
        return _messages().validate_python(json.loads(data))


def _ref(id: str) -> dict[str, str]:
    return {"$ref": id}


def event_record(event: Event) -> dict[str, Any]:
    """An event as the store's JSON data (messages by reference, no nested events)."""
    if isinstance(event, ModelEvent):
        if event.output is None:
            return event_data(event)
        data = event_data(event, exclude={"output": {"message"}})
        data["output"]["message"] = _ref(event.output.message.id)
        return data
    if isinstance(event, ToolEvent):
        data = event_data(event, exclude={"events", "result"})
        if event.result is not None:
            data["result"] = _ref(event.result.id)
        return data
    if isinstance(event, SubtaskEvent):
        return event_data(event, exclude={"events"})
    return event_data(event)


def dump_event(event: Event) -> str:
    """An event as the store's JSON text."""
    try:
        record = event_record(event)
    except ValueError:  # a call's arguments nested too deep to write: a placeholder
        if not isinstance(event, ToolEvent):
            raise
        record = event_record(dataclasses.replace(event, call=flat_call(event.call)))
    try:  # pydantic's encoder: several times faster than json.dumps
        return to_json(record, inf_nan_mode="constants").decode()
    except (ValueError, TypeError, UnicodeError):  # e.g. a lone surrogate in a string
        return json.dumps(record, separators=(",", ":"))


MessageLookup = Callable[[str], ChatMessage]


def load_event(data: str | bytes | dict[str, Any], message: MessageLookup) -> Event:
    """An event from the store's JSON, with message references resolved by ``message``."""
    record = json.loads(data) if isinstance(data, (str, bytes)) else dict(data)
    kind = record.get("event")
    if kind == "model":
        out = record.get("output")
        if out is not None and isinstance(out.get("message"), dict) and "$ref" in out["message"]:
            msg = message(out["message"]["$ref"])
            out = dict(out)
            out["message"] = msg
            record["output"] = out
            if not isinstance(msg, AssistantMessage):
                raise ValueError(f"model event {record.get('id')}: output is a {msg.role} message")
    elif kind == "tool":
        result = record.get("result")
        if isinstance(result, dict) and "$ref" in result:
            msg = message(result["$ref"])
            if not isinstance(msg, ToolMessage):
                raise ValueError(f"tool event {record.get('id')}: result is a {msg.role} message")
            record["result"] = msg
    return event_adapter().validate_python(record)
