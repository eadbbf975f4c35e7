"""Making a sandbox's host parts (its folder, with as root its quota tmpfs mounted, and
its memory cgroup) so that a cancellation meanwhile leaves none of them behind."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ._cgroup import MemoryGroup
from ._tempdir import remove_root

__all__ = ["sandbox_parts", "to_the_end"]

T = TypeVar("T")
Parts = tuple[str, MemoryGroup | None]


async def to_the_end(step: Awaitable[T]) -> tuple[asyncio.Future[T], BaseException | None]:
    """Await ``step`` to its end even when cancelled meanwhile: the finished step and
    the first cancellation that came (``None``: none)."""
    task = asyncio.ensure_future(step)
    cancelled: BaseException | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as e:
            cancelled = cancelled or e
        except BaseException:
            break
    return task, cancelled


def _remove(parts: Parts) -> None:
    root, memory = parts
    if memory is not None:
        memory.remove()
    remove_root(root)


async def sandbox_parts(
    make_root: Callable[[], str], make_group: Callable[[], MemoryGroup | None]
) -> Parts:
    """A new sandbox's folder (``make_root()``) and memory cgroup (``make_group()``),
    made in a thread.

    A thread cannot be stopped: when the caller is cancelled meanwhile (a sample's time
    limit while its sandbox starts, Ctrl-C), this waits for the thread, removes what it
    made (as a cleanup would: a run's kept folder stays) and raises the cancellation.
    When ``make_group()`` fails, the folder is removed before the error is raised.
    """

    def make() -> Parts:
        root = make_root()
        try:
            return root, make_group()
        except BaseException:
            remove_root(root)
            raise

    task, cancelled = await to_the_end(asyncio.to_thread(make))
    if cancelled is None:
        return task.result()
    if not task.cancelled() and task.exception() is None:
        await to_the_end(asyncio.to_thread(_remove, task.result()))
    raise cancelled
