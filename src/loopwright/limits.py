"""Limits: the budgets that end an agent run.

Each limit is a context manager that can nest (the tightest wins) and that is enforced
inside :meth:`Model.generate <loopwright.Model.generate>` and the agent loop::

    with lw.token_limit(50_000), lw.time_limit(120):
        state = await lw.run(agent, "...")

or, equivalently, ``lw.run(agent, "...", limits=[lw.token_limit(50_000), lw.time_limit(120)])``.

- :func:`step_limit` — model calls (one agent step = one model call);
- :func:`message_limit` — messages in the conversation sent to the model;
- :func:`token_limit` — tokens used by model calls (input + output);
- :func:`cost_limit` — dollars spent on model calls (``lw.cost_of``: the price table);
- :func:`time_limit` — wall-clock seconds; cancels a model or tool call in flight;
- :func:`working_limit` — wall-clock seconds minus time spent waiting for retries, for
  a connection slot and in :func:`waiting` blocks (e.g. for a free sandbox); also
  cancels work in flight when the budget is gone.

Counting happens in every context under the limit, including sub-agents and tasks started
within it. When a limit is exceeded, :class:`LimitExceededError` is raised; ``run()``
turns it into ``state.limit``.

The standard agents never run unbounded: without a ``time_limit`` of their own,
``react()`` and ``iterative()`` stop after :data:`DEFAULT_MAX_STEPS` model calls unless a
step limit is already in force around them or their ``max_steps`` says otherwise
(``max_steps=None`` lifts it). Their own bound and time budget are limits of this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Iterator
from contextvars import ContextVar

from ._contexts import var_set
from ._errors import ConfigurationError, LoopwrightError
from ._limit_text import (
    DEFAULT_MAX_STEPS,
    DEFAULT_STEPS_NOTE,
    LimitInfo,
    LimitType,
    limit_message,
    unpriced,
    whole_count,
)
from ._timers import call_at
from ._waits import WaitClock
from .model import ModelCall, model_hook, price_of

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Limit",
    "LimitExceededError",
    "LimitInfo",
    "LimitType",
    "check_limits",
    "cost_limit",
    "limit_message",
    "message_limit",
    "remaining_time",
    "step_limit",
    "time_limit",
    "token_limit",
    "waiting",
    "working_limit",
]


class LimitExceededError(LoopwrightError):
    """A limit was reached. ``run()`` catches it and sets ``state.limit`` (unless
    ``raise_on_limit=True``)."""

    def __init__(self, limit: Limit, value: float, message: str | None = None) -> None:
        self.limit = limit
        self.type: LimitType = limit.type
        self.value = value
        msg = message or limit_message(limit.type, limit.limit, value)
        if limit.note:
            msg = f"{msg} ({limit.note})"
        super().__init__(msg)

    @functools.cached_property
    def info(self) -> LimitInfo:
        """The limit as data, for ``state.limit`` and the transcript (one object per
        error, so the run store can tell it was already recorded)."""
        return LimitInfo(
            type=self.type, limit=self.limit.limit, value=self.value, message=str(self)
        )


_active: ContextVar[tuple[Limit, ...]] = ContextVar("loopwright_limits", default=())
_run_depth: ContextVar[int] = ContextVar("loopwright_run_depth", default=0)


class Limit:
    """A budget. Use the factory functions (:func:`token_limit`...), not this class."""

    type: LimitType

    def __init__(self, limit: float) -> None:
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit != limit:
            raise ConfigurationError(f"{self.type} limit must be a number, got {limit!r}")
        if limit < 0:
            raise ConfigurationError(f"{self.type} limit must be >= 0, got {limit}")
        self.limit = limit
        self.used: float = 0
        self.depth = 0  # the run nesting depth this limit was entered at
        self._token: object | None = None
        self._hooks: contextlib.AbstractContextManager[object] | None = None
        self.note: str | None = None
        """Said after the message when the limit is reached (e.g. where it came from)."""

    def __repr__(self) -> str:
        return f"{self.type}_limit({self.limit:g})"

    # --- context manager ------------------------------------------------------------
    def __enter__(self) -> Limit:
        if self._token is not None:
            raise ConfigurationError(f"{self!r} is already in use; create one per scope")
        self.depth = _run_depth.get()
        self.used = 0
        active = _active.get()
        if not active:  # the outermost limit installs the one hook that serves them all
            # through the public model hook interface, like any observer of model calls
            self._hooks = model_hook(_LIMITS_HOOK)
            self._hooks.__enter__()
        self._token = _active.set((*active, self))
        self._start()
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        try:
            self._stop(exc)  # may raise LimitExceededError (a time limit that fired)
        finally:
            _active.reset(self._token)  # type: ignore[arg-type]
            hooks, self._hooks, self._token = self._hooks, None, None
            if hooks is not None:
                hooks.__exit__(None, None, None)

    def _start(self) -> None:
        pass

    def _stop(self, exc: BaseException | None) -> None:
        pass

    # --- checks and accounting ---------------------------------------------------------
    def check(self, call: ModelCall | None = None) -> None:
        """Raise :class:`LimitExceededError` if this limit is exhausted."""

    def count(self, call: ModelCall) -> None:
        """Account for a model call about to be made (after every limit checked it)."""

    def after_generate(self, call: ModelCall) -> None:
        """Account for a finished model call."""

    def wait_began(self, call: ModelCall | None) -> None:
        """A model call in the scope began to wait (retry backoff, connection queue), or
        (``call`` None) the scope waits for something else (see :func:`waiting`)."""

    def wait_ended(self, call: ModelCall | None, seconds: float) -> None:
        """A model call in the scope (or, ``call`` None, the scope) stopped waiting."""

    def on_wait(self, call: ModelCall, seconds: float) -> None:
        """A model call in the scope is about to sleep ``seconds`` before a retry."""

    def exceeded(self, value: float) -> LimitExceededError:
        return LimitExceededError(self, value)

    def carry(self, used: float) -> None:
        """Count ``used`` as spent before this scope began (a resumed run's earlier parts)."""
        self.used += used


class _Counted(Limit):
    def check(self, call: ModelCall | None = None) -> None:
        # between steps too: a loop never starts a step whose model call it would refuse
        if self.used >= self.limit:
            raise self.exceeded(self.used)  # what was used: the limit, reached


class _StepLimit(_Counted):
    type = "step"

    def count(self, call: ModelCall) -> None:
        self.used += 1


class _MessageLimit(Limit):
    type = "message"

    def check(self, call: ModelCall | None = None) -> None:
        if call is not None and len(call.messages) > self.limit:
            raise self.exceeded(len(call.messages))


class _TokenLimit(_Counted):
    type = "token"

    def after_generate(self, call: ModelCall) -> None:
        if call.output is not None and call.output.usage is not None:
            self.used += call.output.usage.total_tokens


class _CostLimit(Limit):
    """Dollars (``ModelCall.cost``), counted after each call like tokens; a call whose
    cost cannot be known is a ConfigurationError at the next check, never 0."""

    type = "cost"
    unknown: str | None = None  # why the last call's cost is not known

    def _start(self) -> None:
        self.unknown = None

    def check(self, call: ModelCall | None = None) -> None:
        why = self.unknown
        if why is None and call is not None and price_of(call.model.name) is None:
            why = unpriced(call.model.name, "has no known price")
        if why is not None:
            raise ConfigurationError(f"{self!r}: {why}")
        if self.used >= self.limit:
            raise self.exceeded(self.used)

    def after_generate(self, call: ModelCall) -> None:
        out = call.output
        if out is not None and call.cost is None:
            why = "reported no token usage" if out.usage is None else "has no known price"
            self.unknown = unpriced(out.model or call.model.name, why)
        elif out is not None and call.cost is not None:
            self.used += call.cost


class _TimeLimit(Limit):
    """Wall-clock budget; a timer cancels the task that entered it, like
    ``asyncio.timeout``, and the cancellation is turned into LimitExceededError."""

    type: LimitType = "time"

    def __init__(self, limit: float) -> None:
        super().__init__(limit)
        self._began = 0.0
        self._task: asyncio.Task[object] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._fired = False

    def elapsed(self) -> float:
        return time.monotonic() - self._began

    def remaining(self) -> float:
        return max(0.0, self.limit - self.elapsed())

    def _start(self) -> None:
        self._began = time.monotonic()
        self._fired = False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # entered outside a loop: checks only
            return
        self._task = asyncio.current_task()
        if self._task is not None:
            self._schedule(loop)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = call_at(loop, loop.time() + self.remaining(), self._fire)

    def _fire(self) -> None:
        self._fired = True
        if self._task is not None and not self._task.done():
            self._task.cancel(msg=f"loopwright {self!r}")

    def _stop(self, exc: BaseException | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._task = self._task, None
        cancelled_by_us = self._fired and isinstance(exc, asyncio.CancelledError)
        # like asyncio.timeout: only our own cancellation becomes a limit error
        if cancelled_by_us and task is not None and task.uncancel() == 0:
            raise self.exceeded(self.elapsed()) from exc

    def check(self, call: ModelCall | None = None) -> None:
        if self.elapsed() >= self.limit:
            raise self.exceeded(self.elapsed())

    def carry(self, used: float) -> None:
        self._began -= used  # (its timer, if running, is set again for what is left)
        if self._timer is not None:
            self._timer.cancel()
            self._schedule(asyncio.get_running_loop())


class _WorkingLimit(_TimeLimit):
    """Like the time limit, but time spent waiting (retry backoff, queueing for a
    connection slot) is not counted: the timer stops while a model call in the scope
    waits and restarts when no call waits any more. Calls waiting at the same time count
    their common wait once (see :class:`~loopwright._waits.WaitClock`)."""

    type: LimitType = "working"

    def __init__(self, limit: float) -> None:
        super().__init__(limit)
        self.waits = WaitClock()

    @property
    def waiting(self) -> float:
        """Seconds not counted so far: waits, overlapping ones once."""
        return self.waits.total()

    def _start(self) -> None:
        self.waits = WaitClock()
        super()._start()

    def elapsed(self) -> float:
        now = time.monotonic()
        return now - self._began - self.waits.total(now)

    def wait_began(self, call: ModelCall | None) -> None:
        if self.waits.begin() and self._timer is not None:
            self._timer.cancel()  # no working time passes until the waits end

    def wait_ended(self, call: ModelCall | None, seconds: float) -> None:
        # (a limit that fired stays fired: its cancellation is on its way)
        if self.waits.end() and self._timer is not None and self._task and not self._fired:
            self._schedule(asyncio.get_running_loop())


class _LimitsHook:
    """The model hook through which every active limit checks and counts model calls:
    all limits check first, then all count, so a veto leaves no limit half-counted."""

    def before_generate(self, call: ModelCall) -> None:
        active = _active.get()
        for limit in active:
            limit.check(call)
        for limit in active:
            limit.count(call)

    def after_generate(self, call: ModelCall) -> None:
        for limit in _active.get():
            limit.after_generate(call)

    def wait_began(self, call: ModelCall) -> None:
        for limit in _active.get():
            limit.wait_began(call)

    def wait_ended(self, call: ModelCall, seconds: float) -> None:
        for limit in _active.get():
            limit.wait_ended(call, seconds)

    def on_wait(self, call: ModelCall, seconds: float) -> None:
        for limit in _active.get():
            limit.on_wait(call, seconds)

    def longest_wait(self, call: ModelCall) -> float | None:
        """Time left before the tightest time limit (a working limit counts no wait)."""
        return min((x.remaining() for x in _active.get() if type(x) is _TimeLimit), default=None)


_LIMITS_HOOK = _LimitsHook()


def step_limit(steps: int) -> Limit:
    """At most ``steps`` model calls in this scope."""
    whole_count(steps, "step", "steps")
    return _StepLimit(steps)


def message_limit(messages: int) -> Limit:
    """At most ``messages`` messages in a conversation sent to the model."""
    whole_count(messages, "message", "messages")
    return _MessageLimit(messages)


def token_limit(tokens: int) -> Limit:
    """At most ``tokens`` tokens (input + output, summed over calls) in this scope."""
    whole_count(tokens, "token", "tokens")
    return _TokenLimit(tokens)


def cost_limit(dollars: float) -> Limit:
    """At most ``dollars`` US dollars of model calls (``lw.cost_of``), counted like
    :func:`token_limit`. A model with no known price (``lw.set_price`` adds one), or a
    call that reports no usage, is a :class:`~loopwright.ConfigurationError`, never 0."""
    return _CostLimit(dollars)


def time_limit(seconds: float) -> Limit:
    """At most ``seconds`` of wall-clock time; work in flight is cancelled at the limit.

    A sync tool's function cannot be stopped: it keeps running in its worker thread until
    it returns, and its result is dropped (sandboxed commands are killed)."""
    return _TimeLimit(seconds)


def working_limit(seconds: float) -> Limit:
    """At most ``seconds`` of working time: wall-clock time minus retry and queue waits."""
    return _WorkingLimit(seconds)


def default_step_limit() -> Limit:
    """The bound of :data:`DEFAULT_MAX_STEPS` steps that the standard agents use when
    nobody chose one; its message says so."""
    limit = _StepLimit(DEFAULT_MAX_STEPS)
    limit.note = DEFAULT_STEPS_NOTE
    return limit


def active_limits() -> tuple[Limit, ...]:
    """The limits in force in this context, outermost first."""
    return _active.get()


def check_limits() -> None:
    """Raise :class:`LimitExceededError` if any limit in force is exhausted (the agent
    loop calls it between steps, custom loops may too; model calls check on their own)."""
    for limit in _active.get():
        limit.check()


def remaining_time() -> float | None:
    """Seconds left before the tightest time or working limit, or ``None`` if none."""
    left = [limit.remaining() for limit in _active.get() if isinstance(limit, _TimeLimit)]
    return min(left) if left else None


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """Mark the time in this block as a wait for a shared resource (a free sandbox slot,
    say): working limits do not count it, like a model call's retry backoff; time limits
    do, and may end the run while it waits (enter the wait inside their scope)."""
    active = _active.get()
    began = time.monotonic()
    for limit in active:
        limit.wait_began(None)
    try:
        yield
    finally:
        seconds = time.monotonic() - began
        for limit in active:
            limit.wait_ended(None, seconds)


def run_scope() -> var_set[int, int]:
    """Mark a nested run (``run()`` uses it): ``with run_scope() as depth`` gives the new
    depth (a slotted object, not a generator's frame: every live run keeps one)."""
    depth = _run_depth.get() + 1
    return var_set(_run_depth, depth, depth)
