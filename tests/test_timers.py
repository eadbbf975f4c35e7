"""Timers keep nothing alive once cancelled (``loopwright._timers``): a cancelled timer
made inside a run used to hold the run's context (its transcript, its store) in the
event loop's queue long after the run ended."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

import pytest

from loopwright._timers import call_at, deadline

_var: contextvars.ContextVar[str] = contextvars.ContextVar("test_timers_var", default="unset")


async def test_a_timer_runs_its_callback_in_an_empty_context() -> None:
    _var.set("the run's")
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    fired = asyncio.Event()

    def callback() -> None:
        seen.append(_var.get())
        fired.set()

    call_at(loop, loop.time(), callback)
    await fired.wait()
    assert seen == ["unset"]


async def test_a_deadline_still_cancels_what_overruns_it() -> None:
    with pytest.raises(TimeoutError):
        async with deadline(0.01) as scope:
            await asyncio.sleep(10)
    assert scope.expired()
    async with deadline(10) as scope:
        await asyncio.sleep(0)
    assert not scope.expired()
    async with deadline(None) as scope:  # no deadline: nothing scheduled
        scope.reschedule(asyncio.get_running_loop().time() + 10)
    assert not scope.expired()


class Stay:
    """An object that only a context variable holds: alive as long as a context is."""


async def test_a_cancelled_deadline_does_not_hold_the_context_it_was_made_in() -> None:
    held: contextvars.ContextVar[Stay] = contextvars.ContextVar("test_timers_held")

    async def made_inside() -> weakref.ref[Stay]:
        value = Stay()
        held.set(value)
        async with deadline(300):
            pass  # the timer is cancelled here and stays in the loop's queue
        return weakref.ref(value)

    # a live timer due first: the loop drops a cancelled timer when it reaches the head of
    # its queue, or when cancelled timers are most of a queue of more than 100
    loop = asyncio.get_running_loop()
    first = loop.call_later(100, lambda: None)
    try:
        task = asyncio.create_task(made_inside())  # (its own context)
        ref = await task
        del task
        await asyncio.sleep(0)
        gc.collect()
        assert ref() is None
    finally:
        first.cancel()
