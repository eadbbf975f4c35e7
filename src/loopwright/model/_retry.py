"""How long ``Model`` waits before a retry, and when it does not wait at all.

``GenerateConfig.max_retry_wait`` (default 60 s) caps every wait, the server's too: a
``Retry-After`` (or ``retry-after-ms``) within it is honoured as asked; one beyond it is
not slept, and not shortened (a retry sooner than the server asked would be refused
again): the call fails at once with a :class:`~loopwright.ModelAPIError` that says how
long the server asked for, so a fallback model (:mod:`._fallback`) answers at once, or
the caller sees why. Without a ``Retry-After`` the wait is an exponential backoff from
``retry_wait``, with jitter, capped by ``max_retry_wait``.

A wait never outlasts the run: a time limit cancels it at its deadline (the run ends
with that limit; a working limit does not count waits, so it does not end them). When a
fallback model follows the one answering, a wait longer than the time left before the
time limit (model hooks' ``longest_wait``: :mod:`loopwright.limits` gives it) is not
slept either: the call fails over at once (:func:`too_late`), so the fallback answers
within the time left.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._errors import ModelAPIError
from ._config import GenerateConfig

if TYPE_CHECKING:
    from ._model import ModelCall

__all__ = ["FALLBACK_NEXT", "backoff", "refused_wait", "too_late"]

FALLBACK_NEXT = "fallback_next"
"""The key, in a call's scratch data, of whether a fallback model follows the model that
answers the call now (:mod:`._fallback`)."""


def backoff(attempt: int, config: GenerateConfig, retry_after: float | None) -> float:
    """Seconds to wait before retry ``attempt + 1``: the server's ``retry_after`` (see
    :func:`refused_wait` for one beyond the cap), else the backoff with jitter."""
    if retry_after is not None:
        return max(0.0, retry_after)
    base = config.retry_wait if config.retry_wait is not None else 1.0
    wait: float = min(_cap(config), base * (2**attempt))
    # "equal jitter": keep half, randomise the other half, so retries spread out
    return wait / 2 + random.uniform(0, wait / 2)


def _cap(config: GenerateConfig) -> float:
    return config.max_retry_wait if config.max_retry_wait is not None else 60.0


def refused_wait(
    model: str, error: BaseException, reason: str, config: GenerateConfig, after: float | None
) -> ModelAPIError | None:
    """The error to raise, from ``error``, instead of waiting ``after`` seconds (the
    server's ``Retry-After``) when that is beyond ``config.max_retry_wait``; None when
    the wait is within it (or the server asked for none). ``reason`` is ``error`` as a
    warning states it (redacted, bounded). The error is retryable (the same request may
    succeed later) and keeps ``error``'s status, so a fallback model takes the call."""
    cap = _cap(config)
    if after is None or after <= cap:
        return None
    status = getattr(error, "status_code", None)
    return ModelAPIError(
        f"{model}: not retried: the server asked to wait {after:g} s before a retry, beyond "
        f"max_retry_wait ({cap:g} s); raise GenerateConfig.max_retry_wait to wait that long "
        f"({reason})",
        retryable=True,
        retry_after=after,
        status_code=status if isinstance(status, int) else None,
    )


def too_late(
    model: str,
    error: BaseException,
    reason: str,
    wait: float,
    call: ModelCall,
    hooks: Sequence[object],
) -> ModelAPIError | None:
    """The error to raise, from ``error``, instead of waiting ``wait`` seconds when a
    fallback model follows and the wait would outlast the time the hooks leave the call
    (the least their ``longest_wait(call)`` says; None: no bound); else None."""
    if not call.data.get(FALLBACK_NEXT):
        return None
    left: float | None = None
    for hook in hooks:
        longest = getattr(hook, "longest_wait", None)
        value = longest(call) if longest is not None else None
        if value is not None and (left is None or value < left):
            left = value
    if left is None or wait <= left:
        return None
    status = getattr(error, "status_code", None)
    return ModelAPIError(
        f"{model}: not retried: the wait before a retry ({wait:.1f} s) would outlast the "
        f"{left:.1f} s left before the time limit; the fallback model answers ({reason})",
        retryable=True,
        status_code=status if isinstance(status, int) else None,
    )
