"""Answering tool calls without running the tools: what replay needs.

``answer_tool_calls(answer)`` puts a function in force for the tool calls made in this
context: ``execute_tools`` asks it first, and when it returns a
:class:`~loopwright.ToolMessage` that is the call's result — the tool does not run and
the approval policy is not asked; ``None`` lets the call run as usual. The lifecycle
hooks (``before_tool`` / ``after_tool``) and the tool hooks (the transcript) see the
call and its answer as they would any other. ``lw.replay`` answers calls from the run
store this way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TypeAlias

from ..model import ToolCall, ToolMessage

__all__ = ["ToolAnswer", "answer_tool_calls", "current_answer"]

ToolAnswer: TypeAlias = Callable[[ToolCall], Awaitable[ToolMessage | None]]
"""``answer(call)``: the call's result, or ``None`` to run the tool."""

_answer: ContextVar[ToolAnswer | None] = ContextVar("loopwright_tool_answer", default=None)


def current_answer() -> ToolAnswer | None:
    """The function answering tool calls in this context, if any."""
    return _answer.get()


@contextlib.contextmanager
def answer_tool_calls(answer: ToolAnswer) -> Iterator[None]:
    """Answer the tool calls made in this context with ``answer(call)`` when it returns
    a message, instead of running the tool (see the module documentation)."""
    token = _answer.set(answer)
    try:
        yield
    finally:
        _answer.reset(token)
