"""Worker threads for sync tools.

Not ``asyncio.to_thread``: the loop's default executor is small (``cpu + 4`` threads, so
parallel sync tools would queue on a small machine) and ``asyncio.run`` waits for its
threads at exit, so one stuck tool whose call timed out would hang the program. Here the
threads are daemon threads, created on demand without a cap (the caller bounds
concurrency), reused while busy, and retired after a minute idle.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_in_thread"]

_IDLE_SECONDS = 60.0

_Job = Callable[[], None]


class _Pool:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # workers waiting for a job that no submitted job has claimed yet
        self._idle = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._jobs.put(job)
                return
        threading.Thread(
            target=self._work, args=(job,), name="loopwright-tool", daemon=True
        ).start()

    def _work(self, job: _Job) -> None:
        while True:
            job()
            job = None  # type: ignore[assignment]  # drop references while idle
            with self._lock:
                self._idle += 1
            while True:
                try:
                    job = self._jobs.get(timeout=_IDLE_SECONDS)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # nobody claimed us: retire
                            self._idle -= 1
                            return
                    # a job was claimed for an idle worker and is on its way: wait for it


_pool = _Pool()


def _reset_after_fork() -> None:
    global _pool
    _pool = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


async def run_in_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` in a worker thread, with this context's contextvars.

    Cancelling the await (a timeout) stops waiting; the function runs on to its end in
    its thread, and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def job() -> None:
        try:
            result = context.run(fn, *args, **kwargs)
        except BaseException as err:
            if isinstance(err, StopIteration):  # futures refuse it
                wrapped = RuntimeError(f"a sync tool raised {err!r}")
                wrapped.__cause__ = err
                err = wrapped
            outcome: tuple[bool, Any] = (False, err)
        else:
            outcome = (True, result)
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    _pool.submit(job)
    return await future
