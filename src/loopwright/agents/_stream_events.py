"""The events of a streamed run (``lw.run_stream``) and the bounded buffer they wait in.

The events carry the objects the hooks and the transcript see: a tool call's
:class:`~loopwright.ToolCall` and its :class:`~loopwright.ToolMessage` (after every
``after_tool``), the model's :class:`~loopwright.ModelOutput`, the run's
:class:`~loopwright.AgentState`. Text and reasoning deltas are the model layer's
:class:`~loopwright.model.TextDelta` / :class:`~loopwright.model.ReasoningDelta`.

Buffering: the run puts events into a buffer of ``max_events`` (default
:data:`DEFAULT_MAX_EVENTS`) that the consumer drains. Deltas never make the run wait:
when the buffer is full, a delta is joined to the delta at its tail when that is of the
same kind (the consumer then gets fewer, longer deltas; memory stays bounded by the
reply, which the model's ``max_output_chars`` bounds). Every other event (tool calls,
steps) waits for room: a consumer that stops reading holds the run at its next tool
call or step boundary, never in the middle of a model's reply, and the run's time
limits still apply while it waits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import TypeAlias

from ..model import ModelOutput, ToolCall, ToolMessage
from ..model._stream import ReasoningDelta, TextDelta
from ._state import AgentState

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "EventBuffer",
    "ModelReplied",
    "ReasoningDelta",
    "RunFinished",
    "StepFinished",
    "StreamEvent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]

DEFAULT_MAX_EVENTS = 256
"""Events a streamed run buffers for its consumer before tool calls and steps wait."""


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call is about to run (its hooks let it: no ``before_tool`` denied it)."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call ended: ``result`` is what the model receives (``result.error`` is set
    for a failed or denied call)."""

    call: ToolCall
    result: ToolMessage


@dataclass(frozen=True, slots=True)
class ModelReplied:
    """A model call finished with ``output`` (its text was streamed before)."""

    output: ModelOutput


@dataclass(frozen=True, slots=True)
class StepFinished:
    """A step (a model call and the tool calls it asked for) ended."""

    step: int
    """1 for the run's first step (steps of agents used as tools count too)."""
    state: AgentState


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended (the last event): ``state`` is what ``run()`` returns."""

    state: AgentState


StreamEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallFinished
    | ModelReplied
    | StepFinished
    | RunFinished
)
"""Any event of a streamed run."""


class _Joined:
    """Deltas of one kind joined at the buffer's tail (joined into one when read)."""

    __slots__ = ("kind", "pieces")

    def __init__(self, first: TextDelta | ReasoningDelta) -> None:
        self.kind = type(first)
        self.pieces = [first.text]


class EventBuffer:
    """The buffer between a streamed run and its consumer (see the module docs)."""

    __slots__ = ("_closed", "_items", "_max", "_ready", "_room")

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        self._max = max_events
        self._items: deque[StreamEvent | _Joined] = deque()
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._items)

    def put_delta(self, delta: TextDelta | ReasoningDelta) -> None:
        """Add a delta now (never waits; joined to the tail's when the buffer is full)."""
        items = self._items
        if len(items) >= self._max and items:
            tail = items[-1]
            if isinstance(tail, _Joined) and tail.kind is type(delta):
                tail.pieces.append(delta.text)
                return
            if type(tail) is type(delta):
                joined = _Joined(tail)
                joined.pieces.append(delta.text)
                items[-1] = joined
                return
        items.append(delta)
        self._ready.set()

    async def put(self, event: StreamEvent) -> None:
        """Add an event, waiting while the buffer is full (and the consumer is there)."""
        while len(self._items) >= self._max and not self._closed:
            self._room.clear()
            await self._room.wait()
        if not self._closed:
            self._items.append(event)
            self._ready.set()

    def close(self) -> None:
        """No more events will come (the run ended) or be read (the consumer left)."""
        self._closed = True
        self._ready.set()
        self._room.set()

    async def get(self) -> StreamEvent | None:
        """The next event; None once the buffer is closed and empty."""
        items = self._items
        while not items:
            if self._closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        item = items.popleft()
        self._room.set()
        if isinstance(item, _Joined):
            return item.kind("".join(item.pieces))
        return item
