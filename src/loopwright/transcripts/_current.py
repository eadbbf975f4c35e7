"""The context variables that say which transcript (and which span of it) is current."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._events import NO_EVENTS

if TYPE_CHECKING:
    from ._events import Event, ToolEvent
    from ._transcript import Transcript

__all__ = ["_Scope", "_hooked", "_observers", "_scope"]


@dataclass(slots=True)
class _Scope:
    """Where events recorded now go: ``events`` (a transcript's or a subtask's list), or
    within a tool call, ``tool.events``; ``span_id`` is that of the innermost span, tool
    call or subtask."""

    transcript: Transcript
    events: list[Event]
    span_id: str | None
    tool: ToolEvent | None = None
    """The tool call the events go into; then ``events`` is unused (its list is made
    when the first event within it is recorded: most calls record none)."""

    def target(self) -> list[Event]:
        """The list to append to: within a tool call, its own list, made now if it is
        still the shared :data:`NO_EVENTS`."""
        tool = self.tool
        if tool is None:
            return self.events
        events = tool.events
        if events is NO_EVENTS:
            with self.transcript._root.lock:  # (two threads recording the first one)
                events = tool.events
                if events is NO_EVENTS:
                    events = tool.events = []
        return events

    def within(self, span_id: str) -> _Scope:
        """The same place, for the events of span ``span_id`` within it."""
        return _Scope(self.transcript, self.events, span_id, self.tool)


_scope: ContextVar[_Scope | None] = ContextVar("loopwright_transcript", default=None)
_observers: ContextVar[tuple[Callable[[Any], None], ...]] = ContextVar(
    "loopwright_transcript_observers", default=()
)
_hooked: ContextVar[bool] = ContextVar("loopwright_transcript_hooked", default=False)
