"""Tool hooks: observers of every tool call (transcripts, limits, accounting)."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._contexts import var_pushed
from ..model import ToolCall, ToolMessage

if TYPE_CHECKING:
    from ._approval import Approval
    from ._tool import Tool

__all__ = ["ToolExecution", "ToolHook", "current_tool_hooks", "tool_hook"]


@dataclass(slots=True, eq=False)
class ToolExecution:
    """One tool call as hooks see it.

    Hooks get the same object before the call runs and after it ended, on every path:
    a result, an expected error (``message.error``), a bug, a termination or a
    cancellation (``error``).
    """

    call: ToolCall
    """The call as the model asked for it."""
    tool: Tool[..., Any] | None
    """The tool called; ``None`` when the model named an unknown tool."""
    message: ToolMessage | None = None
    """The result for the model (set after the call; ``None`` when it raised)."""
    error: BaseException | None = None
    """An exception that propagates out of ``execute_tools``: a bug in the tool, a
    ``ToolTerminated``, a failing hook, or a cancellation."""
    approval: Approval | None = None
    """The approval policy's answer, when one was asked."""
    truncated: bool = False
    """Whether the output was cut to the output limit."""
    started: float = field(default_factory=time.time)
    """Wall-clock start (seconds since the epoch)."""
    duration: float = 0.0
    """Seconds from start to end, approval included."""
    wait_time: float = 0.0
    """Seconds spent waiting for the approval policy (not working)."""
    data: dict[str, Any] = field(default_factory=dict)
    """Scratch space for hooks (e.g. a transcript event id)."""


class ToolHook(Protocol):
    """Observes tool calls.

    Both methods run in the call's own context (a copy of the caller's), the one the tool
    function runs in (sync tools see it through their worker thread), so contextvars
    set in ``before_tool`` are visible to the tool. ``before_tool`` may raise to stop
    the call (the exception propagates out of ``execute_tools``); ``after_tool`` runs on
    every path.
    """

    def before_tool(self, ex: ToolExecution) -> None: ...

    def after_tool(self, ex: ToolExecution) -> None: ...


_hooks: ContextVar[tuple[ToolHook, ...]] = ContextVar("loopwright_tool_hooks", default=())


def current_tool_hooks() -> tuple[ToolHook, ...]:
    """The tool hooks installed in this context, in installation order."""
    return _hooks.get()


def tool_hook(hook: ToolHook) -> AbstractContextManager[ToolHook]:
    """Install ``hook`` for every tool call executed in this context (and tasks it starts)."""
    return var_pushed(_hooks, hook)
