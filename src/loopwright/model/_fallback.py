"""Fallback models: when a model fails after its retries, or is out of quota, the next
model of its ``fallbacks`` answers the same call.

``get_model("openai/gpt-4o", fallbacks=["anthropic/claude-sonnet-4", "local"])`` (or
``Model(api, fallbacks=[...])``). The call stays one call for hooks (one ``ModelEvent``,
one step, the limits checked once): the fallback renders the conversation with its own
tool protocol, uses its own retries, connection slots and config (the call's config
merged over it), and its answer's ``ModelOutput.model`` names it. The failures met on the
way are kept in the call (``ModelCall.data["fallbacks"]``, the event's ``fallbacks``).

A failure falls back when it is one the failing model retries (a 5xx, a timeout, a
refused connection, a 429: so its retries are used up), or an HTTP 402/429 (out of
quota or credit, retried or not). Not: a bad request, a refused key, a cancelled call,
a stream cut after text reached the consumer (it would be shown twice).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._errors import ModelAPIError
from ._retry import FALLBACK_NEXT
from ._stream import StreamCutError

if TYPE_CHECKING:
    from ._chat import ChatMessage, ToolInfo
    from ._config import GenerateConfig
    from ._model import Model, ModelCall
    from ._output import ModelOutput

__all__ = ["QUOTA_STATUS", "fall_back", "falls_back"]

_log = logging.getLogger("loopwright.model")

QUOTA_STATUS = frozenset({402, 429})
"""HTTP statuses that fall back even when not retried: payment required, too many
requests (OpenAI's ``insufficient_quota`` is a 429)."""


def falls_back(model: Model, error: BaseException) -> bool:
    """Whether ``error``, raised by ``model`` after its retries, lets a fallback answer."""
    if isinstance(error, StreamCutError):
        return False
    if isinstance(error, ModelAPIError) and error.status_code in QUOTA_STATUS:
        return True
    try:
        return model.api.classify_error(error).retry
    except Exception:
        return False


def _reason(model: Model, error: BaseException) -> str:
    from ._model import _reason as reason

    return f"{model.name}: {reason(error, model.api.secrets())}"


async def fall_back(
    model: Model,
    call: ModelCall,
    error: Exception,
    request: tuple[Sequence[ChatMessage], list[ToolInfo], GenerateConfig | None],
) -> tuple[ModelOutput, Model]:
    """Answer ``call`` with ``model``'s fallbacks, in order, after ``error``; returns
    the output and the model that gave it, or raises the last failure (or ``error``
    itself when it does not fall back)."""
    messages, infos, config = request
    if not falls_back(model, error):
        raise error
    failures = [_reason(model, error)]
    failed: Model = model
    last: Exception = error
    for i, fb in enumerate(model.fallbacks):
        _log.warning("%s failed; falling back to %s (%s)", failed.name, fb.name, failures[-1])
        cfg = fb.merged_config(config)
        call.data[FALLBACK_NEXT] = i + 1 < len(model.fallbacks)  # (for its retry waits)
        try:
            output = await fb._answer(call, messages, infos, cfg, call.data.get("stream"))
        except Exception as ex:
            if not falls_back(fb, ex):
                raise
            failures.append(_reason(fb, ex))
            failed, last = fb, ex
            continue
        call.data["fallbacks"] = failures
        return output, fb
    last.add_note("loopwright: every fallback failed: " + "; ".join(failures))
    raise last
