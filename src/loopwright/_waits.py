"""``WaitClock``: how long a scope spent waiting, with overlapping waits counted once."""

from __future__ import annotations

import time

__all__ = ["WaitClock"]


class WaitClock:
    """Seconds a scope spent waiting (retry backoff, queueing for a connection slot).

    Waits are reported as they begin and end (``begin()`` / ``end()``); time during which
    at least one wait of the scope is in progress counts once, however many calls wait at
    once. So the waiting time never exceeds the wall time, and "wall time minus waiting"
    (working time) never runs backwards. Summing each call's own wait instead counted two
    concurrent 10 s backoffs as 20 s of waiting in 10 s of wall time. Times are
    ``time.monotonic()`` seconds.
    """

    __slots__ = ("_open", "_since", "waited")

    def __init__(self) -> None:
        self.waited = 0.0
        """Seconds of waits that ended (plus those added with :meth:`add`)."""
        self._open = 0
        self._since = 0.0

    @property
    def waiting_now(self) -> bool:
        """Whether a wait is in progress."""
        return self._open > 0

    def begin(self, now: float | None = None) -> bool:
        """A wait began; True when it is the only one in progress (waiting starts now)."""
        self._open += 1
        if self._open == 1:
            self._since = time.monotonic() if now is None else now
            return True
        return False

    def end(self, now: float | None = None) -> bool:
        """A wait ended; True when no other is in progress (working resumes now)."""
        if self._open == 0:
            return False  # an end without its begin: nothing to close
        self._open -= 1
        if self._open == 0:
            self.waited += (time.monotonic() if now is None else now) - self._since
            return True
        return False

    def add(self, seconds: float) -> None:
        """Count ``seconds`` of a wait reported only after the fact (e.g. an approval)."""
        if seconds > 0:
            self.waited += seconds

    def total(self, now: float | None = None) -> float:
        """Seconds waited so far, the wait in progress included."""
        if self._open:
            return self.waited + (time.monotonic() if now is None else now) - self._since
        return self.waited
