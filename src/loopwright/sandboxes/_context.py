"""The current run's sandbox (a contextvar), and the cap on sandboxes alive at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import weakref
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from .._errors import ConfigurationError
from ._environment import SandboxEnvironment
from ._reaper import start_reaper
from ._registry import default_sandbox_backend, sandbox_backend
from ._settle import to_the_end
from ._types import SandboxError, SandboxLimits

__all__ = ["max_sandboxes", "sandbox", "set_max_sandboxes", "use_sandbox"]

logger = logging.getLogger("loopwright.sandboxes")

_current: ContextVar[SandboxEnvironment | None] = ContextVar("loopwright_sandbox", default=None)

MAX_SANDBOXES_ENV = "LOOPWRIGHT_MAX_SANDBOXES"


def _default_max() -> int:
    value = os.environ.get(MAX_SANDBOXES_ENV, "").strip()
    if not value:
        return max(8, 4 * (os.cpu_count() or 1))
    if not value.isdigit() or int(value) < 1:
        raise ConfigurationError(
            f"${MAX_SANDBOXES_ENV} must be a positive whole number (sandboxes open at once), "
            f"got {value!r}"
        )
    return int(value)


_max = _default_max()
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def sandbox() -> SandboxEnvironment:
    """The sandbox of the current run (or sample).

    Raises:
        SandboxError: No sandbox is in use in this context.
    """
    env = _current.get()
    if env is None:
        raise SandboxError(
            "no sandbox in this context: run the agent inside `async with "
            "lw.use_sandbox():` (or give the run a sandbox) before using sandbox tools"
        )
    return env


def max_sandboxes() -> int:
    """How many sandboxes may be alive at once (per event loop)."""
    return _max


def set_max_sandboxes(n: int) -> None:
    """Cap how many sandboxes :func:`use_sandbox` keeps alive at once; more wait.

    The default is ``max(8, 4 * CPUs)``, or ``$LOOPWRIGHT_MAX_SANDBOXES``.
    """
    global _max
    if not isinstance(n, int) or n < 1:
        raise ConfigurationError(f"the sandbox cap must be a positive integer, got {n!r}")
    _max = n
    _slots.clear()  # sandboxes alive now release into their old semaphore


def _slot() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    sem = _slots.get(loop)
    if sem is None:
        sem = _slots[loop] = asyncio.Semaphore(_max)
    return sem


@contextlib.asynccontextmanager
async def use_sandbox(
    backend: str | SandboxEnvironment | None = None,
    *,
    limits: SandboxLimits | None = None,
    **options: Any,
) -> AsyncIterator[SandboxEnvironment]:
    """Start a fresh sandbox, make it this context's :func:`sandbox`, clean it up after.

    Cleanup always happens: on success, error, cancellation, limit and SIGTERM (which,
    unless someone installed a handler for it, does what Ctrl-C does). It runs to its end
    even when cancelled again meanwhile, and a failure to clean up is logged, never raised
    over the block's result. When :func:`max_sandboxes` are alive, this waits for one to
    end first (the wait counts against the time limits around it).

    Args:
        backend: ``"bwrap"`` (the default on Linux: isolated), ``"local"`` (a host
            folder, NOT isolated: only for trusted code), a third-party backend's name,
            or a :class:`SandboxEnvironment` someone else manages (installed for this
            context, neither counted nor cleaned up here).
        limits: Limits for every command (defaults: :class:`SandboxLimits`).
        **options: Backend-specific options.

    Example::

        async with lw.use_sandbox() as sb:
            result = await sb.exec(["python3", "-c", "print(6 * 7)"])
    """
    if isinstance(backend, SandboxEnvironment):
        if limits is not None or options:
            raise ConfigurationError("limits and options need a backend name, not a sandbox")
        token = _current.set(backend)
        try:
            yield backend
        finally:
            _current.reset(token)
        return
    cls = sandbox_backend(backend or default_sandbox_backend())
    _terminate_like_interrupt()
    start_reaper()  # (only as PID 1)
    async with _slot():
        env = await cls.create(limits=limits, **options)
        token = _current.set(env)
        try:
            yield env
        finally:
            _current.reset(token)
            await _clean_up(env)


async def _clean_up(env: SandboxEnvironment) -> None:
    """Run ``env.cleanup()`` to its end, even when cancelled meanwhile (the cancellation
    is raised after it); a failure is logged, never raised over the run's result."""
    task, cancelled = await to_the_end(env.cleanup())
    error = None if task.cancelled() else task.exception()
    if error is not None and not isinstance(error, Exception):  # (KeyboardInterrupt...)
        raise error
    if error is not None:
        logger.error(
            "cleaning up the %s sandbox failed; the run's result is kept",
            env.name,
            exc_info=error,
        )
    if cancelled is not None:
        raise cancelled


_sigterm_installed = False


def _terminate_like_interrupt() -> None:
    """Make SIGTERM (how docker, systemd and Kubernetes stop a process) do what Ctrl-C
    does, so that sandboxes are cleaned up: it calls the SIGINT handler in force
    (``asyncio.run`` cancels the main task; plain Python raises KeyboardInterrupt).
    Only from the main thread, once, and only when SIGTERM has its default action (a
    handler someone else installed is left alone)."""
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    _sigterm_installed = True
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
