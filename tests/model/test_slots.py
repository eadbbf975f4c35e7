"""Adaptive connection slots: halved on a rate limit (once per level, never below 1),
regrown by successes (never above max_connections), no slot lost to a cancelled wait."""

from __future__ import annotations

import asyncio

from loopwright.model._slots import AdaptiveSlots


def test_halving_is_once_per_level_and_floored_at_one() -> None:
    slots = AdaptiveSlots("k", 8)
    started = slots.level
    slots.rate_limited(started)
    slots.rate_limited(started)  # a call from before the cut: already counted
    assert slots.allowed == 4
    for _ in range(5):
        slots.rate_limited(slots.level)
    assert slots.allowed == 1 and slots.level == 6


def test_successes_regrow_the_slots_up_to_the_most() -> None:
    slots = AdaptiveSlots("k", 4)
    slots.rate_limited(0)
    slots.rate_limited(1)
    assert slots.allowed == 1
    successes = 0
    while slots.allowed < 4:
        slots.succeeded()
        successes += 1
    # 1 -> 2 after one, 2 -> 3 after two, 3 -> 4 after three (about): a round per slot
    assert 5 <= successes <= 7
    for _ in range(10):
        slots.succeeded()
    assert slots.allowed == 4


async def test_waiters_get_slots_as_the_level_rises_and_a_cancelled_one_takes_none() -> None:
    slots = AdaptiveSlots("k", 2)
    slots.rate_limited(0)  # 1 allowed
    await slots.acquire()
    waiters = [asyncio.create_task(slots.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    assert slots.locked() and not any(w.done() for w in waiters)
    waiters[0].cancel()
    await asyncio.sleep(0)
    slots.succeeded()  # 2 allowed: one more waiter gets a slot
    await asyncio.sleep(0)
    assert [w.done() for w in waiters] == [True, True, False]
    assert slots.in_use == 2
    slots.release()
    await asyncio.sleep(0)
    assert waiters[2].done() and slots.in_use == 2
    slots.release()
    slots.release()
    assert slots.in_use == 0 and not slots.locked()
