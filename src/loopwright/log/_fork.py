"""A fork waits until SQLite has no run store file locked for this process.

SQLite keeps the state of a process's locks in its own memory, which a forked child
inherits: a child forked while a connection of the parent was inside a transaction (or
opening, or closing, folding the log) saw the file locked, for good, by a connection
that does not run there ("database is locked" at its first write). Every such moment,
on whatever connection and thread, is a :func:`file_locked` section: the writer
thread's commits, folds, open and close; the transactions of the connections of their
own that record deferred calls, claims, tool specs, a failed run's end, an import; and
the close of every connection ``_db.py`` opens (a reader's too: the last one to close
folds the log in). A ``before`` fork hook (``os.register_at_fork``) waits until none is
in flight (at most :data:`FORK_WAIT` seconds: a stuck disk delays a fork, never stops
it), and sections that would begin meanwhile wait for the fork. A read transaction is
not one: a child writes a file its parent was reading (it folds less of the log, that
is all).

``subprocess`` runs the hooks only for a ``preexec_fn`` (else it forks in C, running no
Python in the child); ``multiprocessing``'s ``fork`` start method runs them.
"""

from __future__ import annotations

import contextlib

# (imported first: its fork hook, which takes logging's lock, then runs after this
# one, so a section that logs never waits for a fork waiting for it)
import logging  # noqa: F401
import os
import threading
from collections.abc import Iterator

__all__ = ["FORK_WAIT", "file_locked"]

FORK_WAIT = 10.0
"""Seconds a fork waits, at most, for the run store sections in flight in this process
(and a section for a fork) to end."""

_cond = threading.Condition(threading.Lock())
_inside = 0  # sections in flight, all threads (guarded by _cond)
_forking = 0  # forks waiting for them, or under way (guarded by _cond)
_depth = threading.local()  # this thread's sections, nested (n)


@contextlib.contextmanager
def file_locked() -> Iterator[None]:
    """Around what has SQLite lock a run store file for this process: a fork waits
    until it ends. Sections nest (a thread's inner ones never wait for a fork)."""
    global _inside
    depth: int = getattr(_depth, "n", 0)
    with _cond:
        if depth == 0 and _forking:  # (a fork waits for the sections in flight: not more)
            _cond.wait_for(lambda: not _forking, timeout=FORK_WAIT)
        _inside += 1
    _depth.n = depth + 1
    try:
        yield
    finally:
        _depth.n = depth
        with _cond:
            _inside -= 1
            _cond.notify_all()


def _before_fork() -> None:
    global _forking
    own: int = getattr(_depth, "n", 0)  # (forked from inside a section: not waited for)
    with _cond:
        _forking += 1
        _cond.wait_for(lambda: _inside <= own, timeout=FORK_WAIT)


def _after_fork_in_parent() -> None:
    global _forking
    with _cond:
        _forking -= 1
        _cond.notify_all()


def _after_fork_in_child() -> None:
    # (the other threads' sections are not in the child; the lock may have been taken)
    global _cond, _inside, _forking
    _cond, _inside, _forking = threading.Condition(threading.Lock()), getattr(_depth, "n", 0), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
