"""Events and messages to and from the run store's JSON rows.

In the store, events refer to messages by id (``{"$ref": id}``) and hold no nested
events (those are rows of their own, pointing at their container with ``span_id``).
An event's row is one pass of pydantic's serializer (the references written by the
``message_or_ref`` serializer of the fields holding messages, in their places: first in
a model event's output, after a tool event's call; rows written before this had them
last, the same JSON value, and read back the same).

A model event's tools are written once per run and list (the ``tool_sets`` table, by
:func:`tool_set_id`, a digest of the list's JSON text): the writer gives
:func:`dump_event` the list's id, and the row holds ``"tools": {"$ref": id}`` (last; an
empty list is written as it is). Rows written before (schema version 1) hold the list
itself, and read the same: :func:`load_event` resolves a reference through the lookup its
reader gives.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from functools import partial
from typing import Any, get_args

from pydantic import ConfigDict, TypeAdapter
from pydantic_core import to_json, to_jsonable_python

from ..model import AssistantMessage, ChatMessage, GenerateConfig, ToolInfo, ToolMessage
from ..model._bounds import flat_call
from ..model._output import MESSAGE_REFS
from ..model._redact import redact_known
from ..transcripts import Event, InfoEvent, ModelEvent, SubtaskEvent, ToolEvent, event_adapter

__all__ = [
    "add_tool_set",
    "dump_event",
    "dump_message",
    "dump_tools",
    "load_event",
    "load_message",
    "sql_params",
    "tool_set_id",
]

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
        data = _json_data(message.model_dump, exclude_none=True)
        return json.dumps(data, separators=(",", ":"))  # escapes it as \udcxx


def load_message(data: str | bytes) -> ChatMessage:
    """A message from the store's JSON."""
    try:
        return _messages().validate_json(data)
    except ValueError:  # pydantic's JSON parser refuses escaped lone surrogates
        return _messages().validate_python(json.loads(data))


def _json_data(dump: Callable[..., Any], **options: Any) -> Any:
    """``dump(mode="json", **options)``, the JSON data of a pydantic value; with a lone
    surrogate in a key (a file name in a call's arguments, a property of an MCP tool's
    schema), which pydantic's JSON mode refuses, made by Python's json module from the
    Python mode's data (which it escapes as ``\\udXXX``: read back as it was)."""
    try:
        return dump(mode="json", **options)
    except UnicodeError:
        text = json.dumps(dump(mode="python", **options), default=to_jsonable_python)
        return json.loads(text)


_row_adapters: dict[type[Any], TypeAdapter[Any]] = {}


def _rows(kind: type[Any]) -> TypeAdapter[Any]:
    # one adapter for each kind of event, made when first used: a dump through
    # event_adapter()'s union costs half as much again (pydantic's tagged union serializer
    # checks the value against its choices); non-finite floats are written as the
    # constants Python's json module reads, as the rows always had them (in typed fields),
    # a config pydantic takes for ``kind | None``, not for a dataclass alone
    adapter = _row_adapters.get(kind)
    if adapter is None:
        optional: Any = kind | None
        config = ConfigDict(ser_json_inf_nan="constants")
        adapter = _row_adapters[kind] = TypeAdapter(optional, config=config)
    return adapter


_KINDS = frozenset(get_args(get_args(Event)[0]))  # the union's own classes
_NESTED = {"events"}  # a tool call's or subtask's events are rows of their own
_NOT_TOOLS = {"tools"}  # written as a reference to the run's tool set


def event_record(event: Event, tools: str | None = None) -> dict[str, Any]:
    """An event as the store's JSON data (messages by reference, no nested events; a
    model event's tools as a reference to tool set ``tools`` if given)."""
    exclude = _NESTED if tools is None else _NESTED | _NOT_TOOLS
    data: dict[str, Any] = _json_data(
        partial(event_adapter().dump_python, event),
        exclude_none=True,
        exclude=exclude,
        context=MESSAGE_REFS,
        warnings="error",
    )
    if tools is not None:
        data["tools"] = {"$ref": tools}
    return data


def dump_event(event: Event, tools: str | None = None) -> str:
    """An event as the store's JSON text: one pass of pydantic's serializer, the message
    a model event's output or a tool event's result holds written as ``{"$ref": id}``,
    and a model event's tools as ``{"$ref": tools}`` (last) when ``tools``, the id of
    their tool set (:func:`tool_set_id`), is given."""
    kind = type(event)
    if tools is not None and not isinstance(event, ModelEvent):
        raise TypeError(f"a {event.event} event offers no tools")
    try:
        # (a subclass is written as its kind, by event_adapter's union; a model event's
        # config is a pydantic model of its own, which writes a float that is not finite
        # as null in one pass: the two-pass way writes it as the rows always had it)
        if kind in _KINDS and (not isinstance(event, ModelEvent) or _finite(event.config)):
            if kind is ToolEvent or kind is SubtaskEvent:
                exclude: set[str] | None = _NESTED
            else:
                exclude = None if tools is None else _NOT_TOOLS
            row = _rows(kind).dump_json(
                event,
                exclude_none=True,
                exclude=exclude,
                context=MESSAGE_REFS,
                warnings="error",
            )
            if b"NaN" not in row and b"Infinity" not in row:
                if tools is not None:  # (the id is hex digits: nothing to escape)
                    row = b'%s,"tools":{"$ref":"%s"}}' % (row[:-1], tools.encode())
                return row.decode()
            # a float that is not finite (or text that reads so): the rows have always
            # written one in untyped data (a call's arguments, a store's patch) as null:
            # written the two-pass way below, as they were
    except (ValueError, UnicodeError):  # arguments too deep, a lone surrogate: see below
        pass
    try:
        record = event_record(event, tools)
    except ValueError:  # a call's arguments nested too deep to write: a placeholder
        if not isinstance(event, ToolEvent):
            raise
        record = event_record(dataclasses.replace(event, call=flat_call(event.call)))
    # untyped data (an info event's, a subtask's) as a call's arguments: a float that is
    # not finite as null (SQLite's JSON functions, which readers use on rows, refuse it)
    for name in _UNTYPED if isinstance(event, (InfoEvent, SubtaskEvent)) else ():
        if name in record:
            record[name] = to_jsonable_python(record[name], inf_nan_mode="null")
    return _text(record)


_UNTYPED = ("data", "input", "result")  # (of an info event or a subtask)


def _text(data: Any) -> str:
    try:  # pydantic's encoder: several times faster than json.dumps
        # (a typed float that is not finite as "Infinity", "NaN": pydantic reads them back
        # as floats, and SQLite's JSON functions read the row; rows before had the
        # constants, which Python's json reads)
        return to_json(data, inf_nan_mode="strings").decode()
    except (ValueError, TypeError, UnicodeError):  # e.g. a lone surrogate in a string
        return json.dumps(data, separators=(",", ":"))


_tools_adapter: TypeAdapter[Any] | None = None


def dump_tools(tools: list[ToolInfo]) -> str:
    """A list of tools as the ``tool_sets`` table's JSON text: the value a model event's
    row held inline before (one pass; a float that is not finite, in a schema, written
    as null, as the rows had it; the two-pass way for a lone surrogate)."""
    global _tools_adapter
    if _tools_adapter is None:
        _tools_adapter = TypeAdapter(list[ToolInfo])
    try:
        return _tools_adapter.dump_json(tools, exclude_none=True, warnings="error").decode()
    except (ValueError, UnicodeError):  # a lone surrogate: json.dumps escapes it
        dump = partial(_tools_adapter.dump_python, tools)
        data = _json_data(dump, exclude_none=True, warnings="error")
        return _text(data)


def sql_params(params: tuple[Any, ...]) -> tuple[Any, ...]:
    """The parameters of a statement writing a run's row, as written: every text with
    the secrets learnt redacted (a row holds JSON and plain text: both ways), a lone
    surrogate (in plain text, e.g. an error quoting a dataset) as ``\\udXXX``."""
    return tuple(
        redact_known(p, plain=True).encode("utf-8", "backslashreplace").decode()
        if isinstance(p, str)
        else p
        for p in params
    )


def tool_set_id(text: str) -> str:
    """The id of a tool set in the ``tool_sets`` table: a digest of its JSON text (the
    same list, in any sample of a run, is stored once)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def add_tool_set(
    run_id: str,
    tools: list[ToolInfo],
    new: dict[tuple[str, str], str],
    seen: dict[int, tuple[str, str]],
) -> str:
    """The id of the tool set ``tools`` make in run ``run_id``, its row added to ``new``
    (written ``INSERT OR IGNORE``: a run's tool set is one row however many batches
    refer to it). A list is serialised once per batch (``seen``: its id and text by
    ``id()``, the batch's events holding the lists alive), as it is then, like every
    field of an event: a tool's info changed in place is written as changed by the next
    batch."""
    known = seen.get(id(tools))
    if known is None:
        text = redact_known(dump_tools(tools))
        known = seen[id(tools)] = (tool_set_id(text), text)
    ref, text = known
    new[run_id, ref] = text
    return ref


def _finite(config: GenerateConfig) -> bool:
    """Whether every float of ``config`` is finite."""
    return all(math.isfinite(v) for v in vars(config).values() if isinstance(v, float))


MessageLookup = Callable[[str], ChatMessage]
ToolSetLookup = Callable[[str], list[Any]]
"""A tool set's JSON data (a list) by its id; a fresh copy each time."""


def _no_tool_sets(id: str) -> list[Any]:
    raise ValueError(f"a reference to tool set {id!r}, and no tool sets to look it up in")


def _ref(value: dict[str, Any]) -> str:
    """The id a ``{"$ref": id}`` refers to (a damaged row's may be anything)."""
    ref = value["$ref"]
    if not isinstance(ref, str):
        raise ValueError(f"a reference that is not an id: {str(ref)[:40]!r}")
    return ref


def load_event(
    data: str | bytes | dict[str, Any],
    message: MessageLookup,
    tool_set: ToolSetLookup = _no_tool_sets,
) -> Event:
    """An event from the store's JSON, with message references resolved by ``message``
    and a model event's tools reference by ``tool_set`` (rows of schema version 1 hold
    the tools themselves)."""
    record = json.loads(data) if isinstance(data, (str, bytes)) else dict(data)
    if not isinstance(record, dict):
        raise ValueError(f"an event row that is not a JSON object but a {type(record).__name__}")
    kind = record.get("event")
    if kind == "model":
        tools = record.get("tools")
        if isinstance(tools, dict) and "$ref" in tools:
            record["tools"] = tool_set(_ref(tools))
        out = record.get("output")
        if (
            isinstance(out, dict)
            and isinstance(out.get("message"), dict)
            and "$ref" in out["message"]
        ):
            msg = message(_ref(out["message"]))
            out = dict(out)
            out["message"] = msg
            record["output"] = out
            if not isinstance(msg, AssistantMessage):
                raise ValueError(f"model event {record.get('id')}: output is a {msg.role} message")
    elif kind == "tool":
        result = record.get("result")
        if isinstance(result, dict) and "$ref" in result:
            msg = message(_ref(result))
            if not isinstance(msg, ToolMessage):
                raise ValueError(f"tool event {record.get('id')}: result is a {msg.role} message")
            record["result"] = msg
    return event_adapter().validate_python(record)
