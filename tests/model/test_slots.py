"""The connection slots every model call passes through (``model/_slots.py``)."""

from __future__ import annotations

import asyncio

from loopwright.model._slots import Slots


def test_slots_bound_the_holders_and_serve_waiters_in_order() -> None:
    async def main() -> list[str]:
        slots = Slots(2)
        order: list[str] = []
        assert slots.try_take() and slots.try_take()
        assert not slots.try_take()  # both taken

        async def waiter(name: str) -> None:
            await slots.take()
            order.append(name)

        tasks = [asyncio.create_task(waiter(n)) for n in "abc"]
        await asyncio.sleep(0)
        assert order == [] and len(slots.waiters) == 3
        slots.give()  # straight to the oldest waiter: nothing returns to the pool
        await asyncio.sleep(0)
        assert order == ["a"] and slots.free == 0
        slots.give()
        slots.give()
        await asyncio.gather(*tasks)
        assert order == ["a", "b", "c"] and slots.free == 0
        for _ in range(2):
            slots.give()
        assert slots.free == 2  # every slot back once nobody waits
        return order

    assert asyncio.run(main()) == ["a", "b", "c"]


def test_a_free_slot_is_not_taken_past_someone_waiting() -> None:
    async def main() -> None:
        slots = Slots(1)
        assert slots.try_take()
        task = asyncio.create_task(slots.take())
        await asyncio.sleep(0)
        slots.free += 1  # (as if a slot came back while the waiter was not yet woken)
        assert not slots.try_take()  # the waiter goes first
        slots.give()
        await task

    asyncio.run(main())


def test_a_cancelled_waiter_leaves_the_queue_and_costs_no_slot() -> None:
    async def main() -> None:
        slots = Slots(1)
        assert slots.try_take()
        task = asyncio.create_task(slots.take())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled() and not slots.waiters
        slots.give()
        assert slots.free == 1 and slots.try_take()

    asyncio.run(main())


def test_a_waiter_cancelled_after_being_handed_the_slot_passes_it_on() -> None:
    async def main() -> None:
        slots = Slots(1)
        assert slots.try_take()
        first = asyncio.create_task(slots.take())
        second = asyncio.create_task(slots.take())
        await asyncio.sleep(0)
        slots.give()  # handed to `first`, which has not run yet
        first.cancel()  # ... and is cancelled before it does
        await asyncio.gather(first, return_exceptions=True)
        assert first.cancelled()
        await asyncio.wait_for(second, 1)  # the slot went on to `second`
        assert slots.free == 0 and not slots.waiters
        slots.give()
        assert slots.free == 1

    asyncio.run(main())
