"""Connection slots that adapt to rate limits: additive increase, multiplicative decrease.

Calls to one provider (one ``ModelAPI.connection_key()``) share a number of connection
slots, at most ``max_connections`` (the config's, else the provider's default). When a
call is rate limited (HTTP 429) the slots allowed are halved (at least 1); each call that
succeeds gives back ``1 / allowed`` of a slot, so a full round of successes at the current
level adds one, up to ``max_connections`` again (TCP's congestion avoidance). A burst of
429s from calls already in flight when the level was cut halves it once, not once each:
a 429 counts only for a call that started at the current level.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque

__all__ = ["AdaptiveSlots", "slots_for"]

_log = logging.getLogger("loopwright.model")


class AdaptiveSlots:
    """Connection slots for one provider key in one event loop (see the module).

    Attributes:
        key: The provider's connection key.
        most: The most slots (``max_connections``).
        allowed: Slots allowed now (1 to ``most``; fractional between increases).
        in_use: Slots taken.
        level: How many times the level was cut (a call's ``level`` when it started
            tells whether its 429 is news).
    """

    __slots__ = ("_waiters", "allowed", "in_use", "key", "level", "most")

    def __init__(self, key: str, most: int) -> None:
        self.key, self.most = key, most
        self.allowed = float(most)
        self.in_use = 0
        self.level = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __repr__(self) -> str:
        return f"AdaptiveSlots({self.key!r}, {int(self.allowed)}/{self.most}, {self.in_use} in use)"

    def locked(self) -> bool:
        """Whether a call would have to wait for a slot."""
        return bool(self._waiters) or self.in_use >= int(self.allowed)

    async def acquire(self) -> None:
        """Take a slot, in turn when none is free."""
        if not self.locked():
            self.in_use += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: give back
                self.release()
            else:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back."""
        self.in_use -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_use < int(self.allowed):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_use += 1
                waiter.set_result(None)

    def succeeded(self) -> None:
        """A call succeeded: allow ``1 / allowed`` more of a slot (up to ``most``)."""
        if self.allowed < self.most:
            self.allowed = min(float(self.most), self.allowed + 1 / self.allowed)
            self._wake()

    def rate_limited(self, level: int) -> None:
        """A call started at ``level`` was rate limited: halve the slots allowed, once
        per level."""
        if level != self.level:
            return
        self.level += 1
        before = int(self.allowed)
        self.allowed = max(1.0, self.allowed / 2)
        _log.info(
            "%s is rate limited: %d connections allowed (was %d)",
            self.key,
            int(self.allowed),
            before,
        )


# One set of slots per (event loop, connection key, limit): asyncio futures belong to a loop.
_slots: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, int], AdaptiveSlots]
] = weakref.WeakKeyDictionary()


def slots_for(key: str, limit: int) -> AdaptiveSlots:
    """The slots of ``key`` with at most ``limit`` connections, in the running loop."""
    per_loop = _slots.setdefault(asyncio.get_running_loop(), {})
    slots = per_loop.get((key, limit))
    if slots is None:
        slots = per_loop[(key, limit)] = AdaptiveSlots(key, limit)
    return slots
