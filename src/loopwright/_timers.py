"""Timers that keep nothing alive once cancelled: ``deadline()`` and ``call_at()``.

asyncio gives every timer a copy of the current context (``contextvars``), and a
cancelled timer stays in the event loop's queue until it would have fired or until
cancelled timers are more than half of the queue. A timer made inside a run carries the
run's context: its transcript (every event), its store, its scope. So each deadline of a
model call (300 s by default), each time limit and each tool timeout kept its run alive
long after the run ended. With 10,000 agents that is every finished agent's transcript:
the 10-step agents of ``bench/_concurrency.py`` held ~55 KB each beyond their history,
and the garbage collector walked them all again and again.

The timers here run their callback in a fresh, empty context instead: none of
loopwright's timer callbacks reads a context variable (they cancel a task), and a
cancelled one now holds only itself until the loop drops it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["call_at", "deadline"]


def call_at(
    loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], Any]
) -> asyncio.TimerHandle:
    """``loop.call_at(when, callback)``, the callback run in an empty context."""
    return loop.call_at(when, callback, context=contextvars.Context())


class deadline:
    """``asyncio.timeout(delay)`` (``async with deadline(30) as timeout:``, ``None``: no
    deadline) whose timer keeps no context alive once cancelled (see the module's
    docstring). It enters an ``asyncio.Timeout`` without a deadline, then schedules the
    deadline from an empty context; ``as`` gives that ``Timeout``."""

    __slots__ = ("_delay", "_timeout")

    def __init__(self, delay: float | None) -> None:
        self._delay = delay
        self._timeout = asyncio.timeout(None)

    async def __aenter__(self) -> asyncio.Timeout:
        timeout = await self._timeout.__aenter__()
        if self._delay is not None:
            when = asyncio.get_running_loop().time() + self._delay
            contextvars.Context().run(timeout.reschedule, when)
        return timeout

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._timeout.__aexit__(exc_type, exc, tb)
