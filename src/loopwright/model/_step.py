"""Which model call is an agent loop's own step.

The agent loop makes its call for its next action within :class:`agent_step` (or through
:func:`as_step`); other calls
made meanwhile (a history policy's summary, a hook's or a tool's own call) are not steps.
``Model.generate`` takes the mark for the one call it makes (:func:`take_step`), so a
call nested in it is not a step either; the transcript records the mark on the call's
``ModelEvent`` (``step``), and a resume goes on from the last step, not from any call.
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TypeVar

from .._contexts import var_set

__all__ = ["agent_step", "as_step", "in_step", "take_step"]

_T = TypeVar("_T")

_step: ContextVar[bool] = ContextVar("loopwright_agent_step", default=False)


def agent_step() -> var_set[bool, None]:
    """``with agent_step(): output = await model.generate(...)``: that call is the agent
    loop's step (a slotted object, not a coroutine around the call: every agent waiting
    for its model keeps one)."""
    return var_set(_step, True, None)


async def as_step(call: Awaitable[_T]) -> _T:
    """Await ``call`` (a ``model.generate(...)``) as the agent loop's step."""
    with agent_step():
        return await call


def in_step() -> bool:
    """Whether the model call about to be made is the agent loop's step."""
    return _step.get()


def take_step() -> bool:
    """:func:`in_step`, and no call made after this one in the step is."""
    if not _step.get():
        return False
    _step.set(False)
    return True
