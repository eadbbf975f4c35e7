"""A streamed chat completion (``stream: true``) of the openai provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from ..._errors import ModelAPIError
from .._bounds import output_char_limit
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput
from .._stream import StreamDelta
from ._http_errors import MALFORMED, failure_cause, malformed_reply, stream_broke
from ._openai_convert import ChunkAssembler

if TYPE_CHECKING:
    from .openai import OpenAIAPI

__all__ = ["stream_chat"]


async def stream_chat(
    api: OpenAIAPI,
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolInfo],
    config: GenerateConfig,
) -> AsyncIterator[StreamDelta | ModelOutput]:
    """The request ``generate`` would send, with ``stream: true`` and ``include_usage``:
    text and reasoning deltas as the chunks come, the output once a chunk gave the
    finish reason. The request is sent as ``generate`` sends it (a lone surrogate
    replaced, ``content: ""`` after a server rejects null), and its failures are
    translated the same way. A stream that ends before the finish reason, or whose
    connection breaks, or a chunk of the wrong shape (a tool call's id that is not a
    string, ``choices`` that is not a list...), is a retryable :class:`ModelAPIError`
    (``Model`` decides whether it may still be retried); tool calls are only built from
    the complete reply (:class:`ChunkAssembler`). A reply longer than ``max_output_chars``
    is read no further: its output is cut there (``max_tokens``)."""
    body, options = api._request(messages, tools, config)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    try:
        stream = await api._send(body, messages, options, stream=True)
    except Exception as ex:
        failure = api._failure(ex, config)
        if failure is ex:
            raise
        if isinstance(failure, ModelOutput):
            yield failure
            return
        raise failure from failure_cause(api._sdk, ex)
    assembler = ChunkAssembler(output_char_limit(config))
    chunk: object = None
    try:
        async for chunk in stream:
            for delta in assembler.add(chunk):
                yield delta
            if assembler.full:  # longer than would be kept: read no more
                break
        output = assembler.output(tools, api.name)
    except Exception as ex:
        broke = stream_broke(api.name, ex, api.secrets())
        if broke is not None:
            raise broke from ex
        failure = api._failure(ex, config)
        if failure is ex and isinstance(ex, MALFORMED):  # a chunk of the wrong shape
            raise malformed_reply(api.name, chunk, ex, api.secrets()) from ex
        if isinstance(failure, ModelOutput) or failure is ex:
            raise
        raise failure from failure_cause(api._sdk, ex)
    finally:
        await stream.close()
    if output is None:
        raise ModelAPIError(
            f"{api.name}: the stream ended before the reply was complete (no finish_reason)",
            retryable=True,
        )
    yield output
