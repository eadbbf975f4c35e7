"""A call's arguments checked without holding up the event loop (``execute_tools``).

A schema tool's check may match patterns from elsewhere (:mod:`loopwright._patterns`),
each call's matches within 0.5 s and all the calls of a model reply's within 2 s. The
check is made on the event loop while its matches fit
:data:`~loopwright._patterns.LOOP_SLICE` (an ordinary call's take microseconds: no
thread); past that it is made again in a worker thread, the loop free meanwhile, so
the run's time limit and cancellation (and every other run of the process) go on. Once
its caller is cancelled (or done), the thread's check is stopped: a match still running
ends at its timeout, the next one is refused at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._patterns import OffLoop, PatternsTooSlow, on_loop
from ._threads import run_in_thread
from ._tool import Tool

__all__ = ["bind_call"]


async def bind_call(
    tool: Tool[..., Any], arguments: Mapping[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """``tool._bind(arguments)``, off the event loop when its patterns take long.

    Raises:
        ToolArgumentsError: The arguments are invalid; the message is for the model.
    """
    validator = tool._validator
    if validator is not None and not validator.patterns:  # nothing to match: as it was
        return tool._bind(arguments)
    try:
        with on_loop():
            return tool._bind(arguments)
    except PatternsTooSlow:
        pass
    off = OffLoop()
    try:
        bound: tuple[list[Any], dict[str, Any]] = await run_in_thread(
            off.run, tool._bind, arguments
        )
    finally:
        off.stop()  # cancelled: the thread's next match is refused
    return bound
