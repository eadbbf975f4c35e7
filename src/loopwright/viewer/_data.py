"""What the viewer's pages receive: runs, samples, events and messages as plain JSON.

Everything here is data for the page, which puts it in the document as text; the one
piece of HTML made here is an info event's markdown, rendered by markdown-it with raw
HTML off, no images, and only safe link schemes (``javascript:`` and the like are
refused).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from .._terminal import as_typed, cut_middle, one_line, shell_word
from ..log import EventRow, RunInfo, RunLog, RunStoreError, SampleInfo, event_at
from ..model import ChatMessage
from ..transcripts import InfoEvent, ModelEvent, event_adapter, event_data
from ._bounds import MAX_TEXT, Cut

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "damaged_event",
    "event_json",
    "markdown_html",
    "message_json",
    "run_json",
    "sample_json",
    "stored_message",
]

MAX_DEPTH = 64
"""How far up the chain of containers an event's depth is looked for."""


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # commonmark with "html": False: raw HTML in the text is shown as text; links with
    # javascript:, vbscript:, file: or data: (except images) are not made links; no
    # images (a picture could pass for a part of the page, a button or a status): their
    # markdown stays text
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = _safe_link  # type: ignore[method-assign]
    return md.disable("image")


_SCHEME = re.compile(r"^\s*([a-z][a-z0-9+.-]*):", re.IGNORECASE)


def _safe_link(url: str) -> bool:
    """A link the page may hold: a web or mail address, or one without a scheme (no
    ``data:``, ``javascript:``, ``file:``...)."""
    scheme = _SCHEME.match(url)
    return scheme is None or scheme.group(1).lower() in ("http", "https", "mailto")


def markdown_html(text: str) -> str:
    """Markdown as sanitised HTML (raw HTML escaped, unsafe links dropped)."""
    return str(_markdown().render(text))


def json_data(dump: Callable[..., Any], **options: Any) -> Any:
    """``dump(mode="json", **options)``: a pydantic value as JSON data, every key as the
    run holds it. A key with a lone surrogate (a file name's byte that is not UTF-8, in a
    call's arguments) pydantic's JSON mode refuses, or writes as U+FFFD's (another key):
    such a value is made from its Python mode's data by Python's json module, which keeps
    it (as the run store does, ``log/_serialize.py``).

    Raises:
        ValueError: It cannot be made JSON (nested past pydantic's 255 levels).
    """
    try:
        data = dump(mode="json", **options)
    except UnicodeError:
        data = None
    if data is None or _replaced_key(data):
        text = json.dumps(dump(mode="python", **options), default=to_jsonable_python)
        data = json.loads(text)
    return data


def _replaced_key(data: Any) -> bool:
    """Whether a key of ``data`` has U+FFFD (what pydantic may have put for a lone
    surrogate)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if any("\ufffd" in k for k in value if isinstance(k, str)):
                return True
            stack.extend(v for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, (dict, list)))
    return False


def _time(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def run_json(info: RunInfo) -> dict[str, Any]:
    """A run's row, for the runs list and a run's header, cut to a page's bounds
    (``cut`` says whether it was)."""
    return _bounded(_run_json(info))


def _bounded(data: dict[str, Any]) -> dict[str, Any]:
    cut = Cut()
    out: dict[str, Any] = cut(data)
    if cut.cut:
        out["cut"] = True
    return out


def _run_json(info: RunInfo) -> dict[str, Any]:
    duration = (info.finished - info.created).total_seconds() if info.finished else None
    output = info.output
    metrics = output.get("metrics") if isinstance(output, dict) and info.samples else None
    return {
        "id": info.id,
        "name": info.name,
        "model": info.model,
        "status": info.status,
        "created": _time(info.created),
        "finished": _time(info.finished),
        "duration": duration,
        "input": info.input,
        "output": output,
        "error": info.error,
        "limit": info.limit,
        "metadata": info.metadata,
        "samples": info.samples,
        "metrics": metrics,
        "host": info.host,
        "pid": info.pid,
        "messages": len(info.message_ids) if info.message_ids is not None else None,
        "cost": info.cost,
        "unpriced_calls": info.unpriced_calls,
        "resumes": info.resumes,
    }


def sample_json(sample: SampleInfo) -> dict[str, Any]:
    """A sample of an eval, as its table row, cut to a page's bounds."""
    data: dict[str, Any] = json_data(sample.model_dump, exclude={"message_ids"})
    data["messages"] = len(sample.message_ids) if sample.message_ids is not None else None
    return _bounded(data)


def message_json(message: ChatMessage, *, whole: bool = False) -> dict[str, Any]:
    """A chat message, cut to a page's bounds (``cut`` says whether it was) unless
    ``whole``.

    Raises:
        RunStoreError: It cannot be made JSON (a store from elsewhere: a call's
            arguments nested past the 255 levels pydantic writes).
    """
    try:
        data: dict[str, Any] = json_data(message.model_dump, exclude_none=True)
    except ValueError as ex:
        raise RunStoreError(f"message {message.id!r} cannot be shown ({ex})") from None
    return data if whole else _bounded(data)


DAMAGED_MESSAGE = "viewer: a message that cannot be read"


def stored_message(log: RunLog, id: str, *, whole: bool = False) -> dict[str, Any]:
    """The run's message ``id`` as :func:`message_json` makes it; one that cannot be
    read or shown (a damaged row) is, in its place, its id, the role ``damaged`` and
    why (a page's other messages are shown)."""
    try:
        return message_json(log.message(id), whole=whole)
    except RunStoreError as ex:
        why = f"{DAMAGED_MESSAGE}: {cut_middle(str(ex), 2_000)}"
        return _bounded({"id": id, "role": "damaged", "content": why})


class Depths:
    """Where events are nested: the chain of spans, tool calls and subtasks each is in,
    found by following ``span_id`` up, one indexed read per container not yet seen."""

    def __init__(self, log: RunLog) -> None:
        self._log = log
        self._parents: dict[str, list[str]] = {}  # a container's id -> its own chain

    def parents(self, span_id: str | None) -> list[str]:
        """The containers an event in ``span_id`` is in, innermost last."""
        chain: list[str] = []
        current = span_id
        while current is not None and current not in self._parents and len(chain) < MAX_DEPTH:
            chain.append(current)
            row = event_at(self._log, current, damaged_event)
            current = row.event.span_id if row is not None else None
        found = list(self._parents.get(current, [])) if current is not None else []
        if current is not None and current in self._parents:
            found.append(current)
        for id in reversed(chain):
            self._parents[id] = list(found)
            found.append(id)
        return found


def event_json(
    log: RunLog, row: EventRow, depths: Depths, *, whole: bool = False
) -> dict[str, Any]:
    """An event as the transcript shows it: its fields (nested events apart), where it
    is (``seq``, ``parents``, ``depth``), and what it refers to resolved (a model call's
    new input messages, a tool call's result, an info entry's markdown); cut to a page's
    bounds (``cut`` says whether it was) unless ``whole`` (then without the markdown)."""
    ev = row.event
    try:
        dump = partial(event_adapter().dump_python, ev, warnings="error")
        data: dict[str, Any] = json_data(dump, exclude_none=True, exclude={"events", "tools"})
    except ValueError as ex:  # (a store from elsewhere: nested past pydantic's 255 levels)
        ev = damaged_event(RunStoreError(f"event {ev.id!r} cannot be shown ({ex})"))
        ev.id, ev.span_id = row.event.id, row.event.span_id  # (where it is)
        data = event_data(ev)
    if isinstance(ev, ModelEvent):
        data["tools"] = [t.name for t in ev.tools]
        data["input_messages"] = [stored_message(log, i, whole=True) for i in ev.input]
    if not whole:
        data = _bounded(data)
    # where it is, never cut (the page places the event by these)
    data["seq"] = row.seq
    data["sample"] = row.sample
    data["parents"] = depths.parents(ev.span_id)
    data["depth"] = len(data["parents"])
    if whole:
        return data
    if isinstance(ev, InfoEvent) and isinstance(ev.data, str):
        # from the text as sent (cut), never by cutting HTML
        text = ev.data if len(ev.data) <= MAX_TEXT else data["data"]
        data["html"] = markdown_html(text)
    return data


DAMAGED = "viewer: an event that cannot be read"


def damaged_event(ex: RunStoreError) -> InfoEvent:
    """What a page shows for an event row that cannot be read: why, in its place (the
    page's other events are shown)."""
    return InfoEvent(source=DAMAGED, data={"error": cut_middle(str(ex), 2_000)})


MAX_PENDING = 50
"""The most deferred calls a run's page lists (it says when there are more)."""


def pending_json(path: Path, run_id: str) -> dict[str, Any]:
    """The calls a waiting run deferred and not yet decided about, as ``loopwright runs
    approve`` shows them (``approval/_shown.py``): the tool name and id as typed, the
    arguments as JSON with every character that a page would hide or reorder (a bidi
    override, a zero-width space) escaped, cut in the middle past
    :data:`~loopwright.approval._shown.MAX_SHOWN` characters with how to read them
    whole, a run of blanks noted; and the command that approves each call for exactly
    these arguments (by their hash; a call cut: the command that shows it whole). A
    person approves from this page's words, so they are the listing's: ``more`` says
    that the page does not list every call, ``tools`` how many calls of each tool
    wait (every one, those past the page's list too), the rarest first; the commands
    are quoted for a shell (``_terminal.shell_word``)."""
    from ..approval._shown import (
        MAX_NAME,
        MAX_SHOWN,
        arguments_text,
        notes,
        shown_whole,
        tools_summary,
    )
    from ..log._approvals import deferred_calls, deferred_tools

    found = deferred_calls(path, run_id, states=("pending", "decided"), limit=MAX_PENDING + 1)
    command = f"loopwright runs approve {shell_word(run_id)}"  # (quoted for a shell)
    calls = []
    for c in found[:MAX_PENDING]:
        typed = as_typed(c.call_id, MAX_NAME)  # (read; in a command: quoted for a shell)
        whole_command = f"{command} --whole {shell_word(c.call_id, MAX_NAME)}"
        # (a template of the page's own: an id's braces are text, never a field)
        marker = (
            "\n[... {cut} characters not shown: "
            + whole_command.replace("{", "{{").replace("}", "}}")
            + " shows them all ...]\n"
        )
        text = arguments_text(c.call)
        whole = shown_whole(c.call)
        calls.append(
            {
                "id": typed,
                "tool": as_typed(c.call.function, MAX_NAME),
                "arguments": cut_middle(text, MAX_SHOWN, marker=marker),
                "notes": notes(text),
                "whole": whole,
                "approve": (
                    f"{command} --approve "
                    + shell_word(f"{c.call_id}={c.arguments_hash}", MAX_NAME + 65)
                    if whole
                    else whole_command
                ),
                "hash": one_line(c.arguments_hash, 100),
                "approver": one_line(c.approver or "", 200),
                "explanation": one_line(c.explanation or "", 1000),
                "state": c.state,
                "decision": c.decision,
            }
        )
    return {
        "calls": calls,
        "more": len(found) > MAX_PENDING,
        # (every call counted, those past the page's list too)
        "tools": tools_summary(deferred_tools(path, run_id, states=("pending", "decided"))),
        "command": command,
    }
