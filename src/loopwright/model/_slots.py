"""``Slots``: the connection limit of a provider, free to pass when a slot is free."""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Slots"]


class Slots:
    """A counting semaphore whose uncontended path is one method call, no coroutine.

    ``asyncio.Semaphore`` costs half a dozen Python calls per acquire and release even
    when nobody waits; every model call passes through one. Waiters are served first
    come, first served: a slot given back goes straight to the oldest waiter, and nobody
    takes a free slot while others wait. Belongs to one event loop, like any asyncio
    primitive.
    """

    __slots__ = ("free", "waiters")

    def __init__(self, limit: int) -> None:
        self.free = limit
        self.waiters: deque[asyncio.Future[None]] = deque()

    def try_take(self) -> bool:
        """Take a slot if one is free and nobody waits; never blocks."""
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take a slot, waiting for one in turn."""
        if self.try_take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot just as we were cancelled: pass it on
            elif waiter in self.waiters:  # (give() drops cancelled waiters it meets)
                self.waiters.remove(waiter)
            raise

    def give(self) -> None:
        """Give a slot back: to the oldest waiter still waiting, else to the pool."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1
