"""Streaming a model's reply: the deltas a provider yields and where ``Model`` sends them.

A provider streams by implementing :meth:`ModelAPI.generate_stream`: an async iterator
of :class:`TextDelta` and :class:`ReasoningDelta` items, ending with the complete
:class:`ModelOutput` (the one :meth:`ModelAPI.generate` would have returned). The
default wraps ``generate()``: one delta with the whole text at the end.

``Model.generate`` streams only when a sink is installed for the context
(:func:`stream_to`, which ``lw.run_stream`` does): it then calls ``generate_stream`` and
hands every delta to the sink as it arrives. Everything else (retries, hooks, the
transcript, tool-call parsing) sees the complete output, exactly as without a sink: a
tool call is only ever built from a finished reply. A stream that breaks before any
delta reached the sink is an ordinary failed attempt (retried when the error is
retryable); once a delta reached it, the attempt cannot be repeated without the
consumer seeing text twice, so the failure is a :class:`StreamCutError` (not retried),
the attempt's deadline passing included.
The openai and anthropic providers read a stream no further than ``max_output_chars``
(of text, reasoning or tool-call arguments): the output is cut there (``max_tokens``,
any tool call it holds not run), as a reply that long would be cut anyway, and a server
that streams without end would otherwise fill the memory until the deadline.

Text protocols (``react``, ``json``) send the model's raw text, which is not shown as
it is: the sink gets the thought as :class:`ReasoningDelta`\\ s (the parsed message keeps
it in ``reasoning``): for ``react`` the raw text before the first ``Action:`` / ``Final
Answer:`` / ``Observation:`` as it comes (a few characters are held back to find a
marker split across deltas), for ``json`` and other text protocols the parsed thought
once the reply is complete; then the parsed message's text (a final answer without an
answer tool) as one :class:`TextDelta`. Actions are parsed from the complete reply.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from .._errors import ModelAPIError

__all__ = [
    "ReasoningDelta",
    "StreamCutError",
    "StreamDelta",
    "StreamSink",
    "TextDelta",
    "ThoughtFilter",
    "current_sink",
    "stream_to",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, as it was written."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (thinking), as it was written."""

    text: str


StreamDelta = TextDelta | ReasoningDelta
StreamSink = Callable[[StreamDelta], None]
"""Receives deltas; it must not block (``run_stream`` buffers and coalesces)."""


class StreamCutError(ModelAPIError):
    """The stream broke after part of the reply had reached the consumer: not retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


_sink: ContextVar[StreamSink | None] = ContextVar("loopwright_stream_sink", default=None)


def current_sink() -> StreamSink | None:
    """The sink model calls in this context stream to, or None (no streaming)."""
    return _sink.get()


@contextlib.contextmanager
def stream_to(sink: StreamSink | None) -> Iterator[None]:
    """Stream every model call made in this context (and the tasks it starts) to
    ``sink`` (``None``: stop streaming)."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


_MARKERS: dict[str, tuple[str, ...]] = {"react": ("Action:", "Final Answer:", "Observation:")}
"""Per text protocol, where the thought ends (the rest is parsed, not streamed)."""


class ThoughtFilter:
    """Passes on the thought part of a text protocol's raw reply, delta by delta.

    For a protocol with markers the text before the first marker goes through; a tail
    as long as the longest marker is held back until it cannot be the start of one.
    Per delta the work is bounded by the delta and the longest marker, never by the
    reply so far. A protocol without markers passes nothing (its thought is sent once
    parsed).
    """

    __slots__ = ("_held", "_keep", "_markers", "done", "passed")

    def __init__(self, protocol: str) -> None:
        self._markers = _MARKERS.get(protocol, ())
        self._keep = max((len(m) for m in self._markers), default=0)
        self._held = ""
        self.done = not self._markers
        self.passed = False
        """Whether any text went through."""

    def feed(self, text: str) -> str:
        """The part of ``text`` (with what was held back) that may be shown now."""
        if self.done:
            return ""
        text = self._held + text
        cut = min((i for i in (text.find(m) for m in self._markers) if i >= 0), default=-1)
        if cut >= 0:
            self.done = True
            self._held = ""
            shown = text[:cut]
        else:
            keep = min(self._keep - 1, len(text))
            shown, self._held = text[: len(text) - keep], text[len(text) - keep :]
        self.passed = self.passed or bool(shown)
        return shown

    def flush(self) -> str:
        """What was held back, once the reply ended without a marker."""
        shown, self._held = ("" if self.done else self._held), ""
        self.done = True
        self.passed = self.passed or bool(shown)
        return shown
