"""Events and messages to and from the run store's JSON rows.

In the store, events refer to messages by id (``{"$ref": id}``) and hold no nested
events (those are rows of their own, pointing at their container with ``span_id``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import to_json

from .._fast import copy_model
from ..model import AssistantMessage, ChatMessage, ToolInfo, ToolMessage
from ..model._bounds import flat_call
from ..transcripts import Event, ModelEvent, SubtaskEvent, ToolEvent, event_adapter

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
            message = copy_model(message, tool_calls=[flat_call(c) for c in message.tool_calls])
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
            return event.model_dump(mode="json", exclude_none=True)
        data = event.model_dump(mode="json", exclude_none=True, exclude={"output": {"message"}})
        data["output"]["message"] = _ref(event.output.message.id)
        return data
    if isinstance(event, ToolEvent):
        data = event.model_dump(mode="json", exclude_none=True, exclude={"events", "result"})
        if event.result is not None:
            data["result"] = _ref(event.result.id)
        return data
    if isinstance(event, SubtaskEvent):
        return event.model_dump(mode="json", exclude_none=True, exclude={"events"})
    return event.model_dump(mode="json", exclude_none=True)


def dump_event(event: Event) -> str:
    """An event as the store's JSON text."""
    try:
        if isinstance(event, ModelEvent):
            return _dump_model_event(event)
    except (ValueError, TypeError, UnicodeError):  # e.g. a lone surrogate: the general way
        pass
    try:
        record = event_record(event)
    except ValueError:  # a call's arguments nested too deep to write: a placeholder
        if not isinstance(event, ToolEvent):
            raise
        record = event_record(copy_model(event, call=flat_call(event.call)))
    try:  # pydantic's encoder: several times faster than json.dumps
        return to_json(record, inf_nan_mode="constants").decode()
    except (ValueError, TypeError, UnicodeError):  # e.g. a lone surrogate in a string
        return json.dumps(record, separators=(",", ":"))


_MODEL_EVENT_REST = {"tools", "output"}
_OUTPUT_REST = {"message"}
# the JSON of a list of tools, by the identity of its ToolInfo objects (kept alive here,
# so an id is not reused): every model call of a run offers the same tools
_tools_json: dict[tuple[int, ...], tuple[list[ToolInfo], str]] = {}


def _dump_tools(tools: list[ToolInfo]) -> str:
    key = tuple(map(id, tools))
    hit = _tools_json.get(key)
    if hit is not None:
        return hit[1]
    text = to_json(tools, exclude_none=True, inf_nan_mode="constants").decode()
    if len(_tools_json) >= 256:
        _tools_json.clear()
    _tools_json[key] = (list(tools), text)
    return text


def _dump_model_event(event: ModelEvent) -> str:
    """What ``to_json(event_record(event))`` gives, built from pieces: the tools offered
    (the largest part, the same at every step) are serialised once per list of tools.

    Tool descriptions are treated as fixed once offered (``Tool.info`` builds them once).
    """
    head = event.model_dump_json(exclude_none=True, exclude=_MODEL_EVENT_REST)
    parts = [head[:-1], ',"tools":', _dump_tools(event.tools)]
    out = event.output
    if out is not None:
        body = out.model_dump_json(exclude_none=True, exclude=_OUTPUT_REST)
        ref = json.dumps(out.message.id)
        parts += [',"output":', body[:-1], "," if len(body) > 2 else "", '"message":{"$ref":']
        parts += [ref, "}}"]
    parts.append("}")
    return "".join(parts)


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
