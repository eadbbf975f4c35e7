"""The current run's sandbox (a contextvar), and the cap on sandboxes alive at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from .._errors import ConfigurationError
from ._environment import SandboxEnvironment
from ._registry import default_sandbox_backend, sandbox_backend
from ._types import SandboxError, SandboxLimits

__all__ = ["max_sandboxes", "sandbox", "set_max_sandboxes", "use_sandbox"]

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

    Cleanup always happens: on success, error, cancellation and limit. When
    :func:`max_sandboxes` are alive, this waits for one to end first.

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
    async with _slot():
        env = await cls.create(limits=limits, **options)
        token = _current.set(env)
        try:
            yield env
        finally:
            _current.reset(token)
            # shielded: a second cancellation must not leave the files behind (the
            # cleanup task runs to its end even if this await is interrupted)
            await asyncio.shield(env.cleanup())
