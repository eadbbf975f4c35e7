"""The context variables that say which transcript (and which span of it) is current."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._events import Event
    from ._transcript import Transcript

__all__ = ["_Scope", "_hooked", "_observers", "_scope"]


@dataclass(slots=True)
class _Scope:
    transcript: Transcript
    events: list[Event]
    span_id: str | None


_scope: ContextVar[_Scope | None] = ContextVar("loopwright_transcript", default=None)
_observers: ContextVar[tuple[Callable[[Any], None], ...]] = ContextVar(
    "loopwright_transcript_observers", default=()
)
_hooked: ContextVar[bool] = ContextVar("loopwright_transcript_hooked", default=False)
