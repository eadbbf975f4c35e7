"""A streamed chat completion (``stream: true``) of the openai provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ..._errors import ModelAPIError
from .._bounds import output_char_limit
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput
from .._stream import ReasoningDelta, StreamDelta, TextDelta
from ._http_errors import MALFORMED, failure_cause, malformed_reply, reply_start, stream_broke
from ._openai_convert import ChunkAssembler, output_from_openai

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
    is read no further: its output is cut there (``max_tokens``). A server that does not
    stream answers with one JSON body: that is read as ``generate`` reads it (its text
    and reasoning then come as one delta each)."""
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
    output: ModelOutput | None
    try:
        if _answered_whole(stream):
            output = await _whole_reply(api, stream, tools)
            for delta in _deltas_of(output):
                yield delta
        else:
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


def _answered_whole(stream: Any) -> bool:
    """Whether the server answered the streamed request with a JSON body, not events."""
    response = getattr(stream, "response", None)
    kind = getattr(response, "headers", {}).get("content-type", "")
    return isinstance(kind, str) and "json" in kind.lower()


async def _whole_reply(api: OpenAIAPI, stream: Any, tools: Sequence[ToolInfo]) -> ModelOutput:
    """The output of a JSON body that answered a streamed request (read up to the HTTP
    client's bound). An ``error`` in it is an error; a body that is no completion is a
    malformed reply (``TypeError``)."""
    data = json.loads(await stream.response.aread())
    if isinstance(data, dict) and "choices" not in data and "error" in data:
        error = data["error"]
        text = error.get("message") if isinstance(error, dict) else error
        raise ModelAPIError(
            f"{api.name}: {reply_start(text, api.secrets(), 1000)}", retryable=False
        )
    if not isinstance(data, dict):
        raise TypeError(f"the body is a {type(data).__name__}, not a chat completion")
    output = output_from_openai(
        api._sdk.types.chat.ChatCompletion.construct(**data), tools, api.name
    )
    if output is None:
        raise ModelAPIError(f"{api.name}: the response had no choices", retryable=True)
    return output


def _deltas_of(output: ModelOutput) -> list[StreamDelta]:
    reasoning, text = output.message.reasoning, output.message.content
    return [
        *([ReasoningDelta(reasoning)] if reasoning else []),
        *([TextDelta(text)] if text else []),
    ]
