"""Reaping orphans when loopwright is PID 1 (a container started without an init).

Processes whose parent dies are handed to PID 1, which must ``wait`` for them or they
stay zombies forever. When this process is PID 1, a daemon thread looks every second
for zombie children and reaps those that have been zombies for :data:`GRACE` seconds.

Exit statuses are not stolen: the children this process starts on purpose are waited
for at once by whoever started them (asyncio's child watcher blocks in ``waitpid`` on
each of its pids; ``subprocess`` waits when the program asks), so only a zombie that
nobody has claimed for a while is reaped: an orphan adopted from elsewhere, or a child
a program started and never waited for. Only ever by pid (``waitpid(pid, WNOHANG)``),
never ``waitpid(-1)``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from ._process import proc_stats

__all__ = ["GRACE", "start_reaper", "zombie_children"]

GRACE = 5.0
"""Seconds a zombie child is left to its own parent code before it is reaped."""

_INTERVAL = 1.0
_started = False
_lock = threading.Lock()


def zombie_children(parent: int) -> list[int]:
    """The pids of the zombie children of ``parent``, read from ``/proc``."""
    return [
        pid
        for pid, fields in proc_stats()
        if len(fields) > 1 and fields[0] == b"Z" and int(fields[1]) == parent
    ]


def _reap_forever() -> None:
    me = os.getpid()
    first_seen: dict[int, float] = {}
    while True:
        now = time.monotonic()
        zombies = set(zombie_children(me))
        for pid in list(first_seen):
            if pid not in zombies:
                del first_seen[pid]  # reaped by its own waiter
        for pid in zombies:
            since = first_seen.setdefault(pid, now)
            if now - since >= GRACE:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
                first_seen.pop(pid, None)
        time.sleep(_INTERVAL)


def start_reaper() -> bool:
    """Start the reaper thread if this process is PID 1 (once); whether it runs."""
    global _started
    with _lock:
        if not _started and os.getpid() == 1 and os.path.isdir("/proc/self"):
            _started = True
            threading.Thread(target=_reap_forever, name="loopwright-reaper", daemon=True).start()
        return _started
