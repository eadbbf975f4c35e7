"""Bounds on what an HTTP provider's server sends: its body, decoded, and a stream's events.

httpx reads a body whole (the SDKs read every reply that is not a stream) and inflates a
``Content-Encoding: gzip`` body as it comes: a few kilobytes may inflate to gigabytes. The
SDKs' event-stream decoders keep an event until its blank line, with no limit, so a
stream that never ends its line grows until the deadline. The SDK clients' HTTP client
(:mod:`._sdk_clients`) bounds both with a response hook (:func:`bound_response`): the
body is decoded as it is read and counted after decoding, a stream per event (the bytes
since its last blank line); past the limit reading stops with a
:class:`ResponseTooLargeError` (not retried: the same request would get the same reply).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

from ..._errors import ModelAPIError

__all__ = ["ResponseTooLargeError", "bound_response", "too_large"]

_BLANK_LINES = (b"\n\n", b"\n\r\n", b"\r\r")  # where an event ends


class ResponseTooLargeError(ModelAPIError):
    """A server's response (or one event of its stream) was larger than the limit."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


def too_large(error: BaseException) -> ResponseTooLargeError | None:
    """The :class:`ResponseTooLargeError` that ``error`` is or was raised from, if any
    (the SDKs raise their own connection error from what their HTTP client raised)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLargeError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


async def _bounded(
    source: AsyncIterator[bytes], limit: int, events: bool, where: str
) -> AsyncIterator[bytes]:
    size = 0
    tail = b""
    async for chunk in source:
        if events:
            seen = tail + chunk
            end = max(seen.rfind(blank) for blank in _BLANK_LINES)
            size = len(seen) - end if end >= 0 else size + len(chunk)
            tail = seen[-2:]
        else:
            size += len(chunk)
        if size > limit:
            what = "an event of its stream" if events else "its body"
            raise ResponseTooLargeError(
                f"the response of {where} was not read further: {what} is more than "
                f"{limit:,} bytes (decoded)"
            )
        yield chunk


def _stream_class(module: Any) -> type:
    cached = getattr(module, "_loopwright_bounded_stream", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]

    class BoundedStream(module.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, source: AsyncIterator[bytes], raw: Any) -> None:
            self._source, self._raw = source, raw

        def __aiter__(self) -> AsyncIterator[bytes]:
            return self._source

        async def aclose(self) -> None:
            aclose = getattr(self._source, "aclose", None)
            if aclose is not None:
                await aclose()
            await self._raw.aclose()

    module._loopwright_bounded_stream = BoundedStream
    return BoundedStream


def bound_response(response: Any, limit: int) -> None:
    """Make ``response`` (an ``httpx`` response whose body is not read yet) decode its
    body itself and stop past ``limit`` bytes (see the module documentation)."""
    module = sys.modules[type(response).__module__.split(".")[0]]  # httpx, or the fork
    raw = response.stream
    encoding = response.headers.get("content-encoding", "").strip().lower()
    source: AsyncIterator[bytes]
    if encoding in ("", "identity"):
        source = raw.__aiter__()
    else:  # decoded here, piece by piece, by a response of its own, then counted
        coded = type(response)(response.status_code, headers=response.headers.raw, stream=raw)
        source = coded.aiter_bytes()
        del response.headers["content-encoding"]
    events = response.headers.get("content-type", "").startswith("text/event-stream")
    url = response.request.url
    where = f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"
    response.stream = _stream_class(module)(_bounded(source, limit, events, where), raw)
