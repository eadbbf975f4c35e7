"""One streamed attempt of ``Model.generate``: the provider's deltas to the sink, the
complete output returned (the rules are in :mod:`loopwright.model._stream`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._errors import ModelAPIError
from ._api import ModelAPI
from ._chat import ChatMessage, ToolInfo
from ._config import GenerateConfig
from ._output import ModelOutput
from ._stream import ReasoningDelta, StreamCutError, StreamSink, TextDelta, ThoughtFilter

__all__ = ["DELIVERED", "cut_at_deadline", "stream_attempt"]

DELIVERED = "stream_delivered"
"""The key, in a call's scratch data, of whether its streamed attempt delivered a delta."""


def cut_at_deadline(model: str, timeout: float) -> StreamCutError:
    """The error of a streamed attempt whose deadline passed after a delta reached the
    consumer: not retried (a retry would send that text again), unlike a timeout."""
    return StreamCutError(
        f"{model} did not finish within {timeout:g}s, after part of the reply reached the "
        "consumer; not retried, since a retry would send that text again (raise "
        "GenerateConfig.timeout)"
    )


async def stream_attempt(
    api: ModelAPI,
    request: tuple[Sequence[ChatMessage], Sequence[ToolInfo], GenerateConfig],
    sink: StreamSink,
    thoughts: ThoughtFilter | None,
    reason: Callable[[BaseException], str],
    data: dict[str, Any] | None = None,
) -> ModelOutput:
    """Call ``api.generate_stream`` with ``request``; hand each delta to ``sink``
    (through ``thoughts`` for a text protocol, whose thought goes as reasoning).
    ``data[DELIVERED]`` (the call's scratch data) says whether a delta reached the sink,
    also when the attempt is cancelled (its deadline passed: :func:`cut_at_deadline`).

    Raises:
        StreamCutError: The stream broke, or ended early, after a delta reached the sink.
        ModelAPIError: It ended before the reply did, with nothing delivered (retryable).
    """
    delivered = False
    if data is not None:
        data[DELIVERED] = False
    output: ModelOutput | None = None
    stream: Any = api.generate_stream(*request)
    try:
        while True:
            try:
                item = await anext(stream)
            except StopAsyncIteration:
                break
            except Exception as ex:
                if not delivered:
                    raise
                raise StreamCutError(
                    f"{api.name}: the stream broke after part of the reply reached the "
                    f"consumer ({reason(ex)}); not retried, since a retry would send that "
                    "text again"
                ) from ex
            if isinstance(item, ModelOutput):
                output = item
                continue
            if thoughts is not None:  # a text protocol: its thought is reasoning
                shown = thoughts.feed(item.text) if isinstance(item, TextDelta) else ""
                if not shown:
                    continue
                item = ReasoningDelta(shown)
            if item.text:
                sink(item)
                delivered = True
                if data is not None:
                    data[DELIVERED] = True
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if output is None:
        if delivered:
            raise StreamCutError(f"{api.name}: the stream ended before the reply did")
        raise ModelAPIError(f"{api.name}: the stream ended before the reply did", retryable=True)
    if thoughts is not None:
        tail = thoughts.flush()
        if tail:
            sink(ReasoningDelta(tail))
    return output
