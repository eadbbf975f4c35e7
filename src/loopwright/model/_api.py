"""The small interface each model provider implements."""

from __future__ import annotations

import abc
import ipaddress
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._errors import ModelAPIError
from ._chat import ChatMessage, ToolInfo
from ._config import GenerateConfig
from ._output import ModelOutput
from ._stream import ReasoningDelta, StreamDelta, TextDelta

__all__ = ["LOCAL_REFUSED_RETRIES", "ModelAPI", "RetryDecision", "refused_on_this_machine"]

LOCAL_REFUSED_RETRIES = 1
"""Retries (so two tries) for a connection refused by a server on this machine
(``localhost``, ``127.0.0.1``, ``::1``): nothing listens there, and waiting ~25 s for it
rarely helps. A remote server's refusal gets the config's ``max_retries``."""


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Whether a failed call may be retried, and how long the provider asked us to wait."""

    retry: bool
    after: float | None = None
    max_retries: int | None = None
    """Retry this kind of failure at most this many times (None: the config's
    ``max_retries``; the smaller of the two counts)."""


def _is_this_machine(host: str | None) -> bool:
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def refused_on_this_machine(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is a connection refused by a
    server on this machine: a ``ConnectionRefusedError`` in the chain, and an HTTP
    request in it (``error.request.url``, as httpx and the SDKs carry) to a loopback
    host."""
    refused = local = False
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 20:
        seen.add(id(current))
        refused = refused or isinstance(current, ConnectionRefusedError)
        try:
            url = getattr(getattr(current, "request", None), "url", None)
        except Exception:  # httpx raises when an exception has no request attached
            url = None
        if url is not None and not local:
            try:
                local = _is_this_machine(urlsplit(str(url)).hostname)
            except ValueError:
                pass
        current = current.__cause__ or current.__context__
    return refused and local


class ModelAPI(abc.ABC):
    """A provider's model: turns messages and tools into one :class:`ModelOutput`.

    Implementations do one request per :meth:`generate` call and nothing else:
    :class:`~loopwright.Model` adds retries, timeouts, concurrency limits, usage
    accounting and event recording around it.

    Attributes:
        provider: The provider's registry name (``openai``, ``mock``...).
        model_name: The model's name within the provider.
        supports_tools: Whether the API has native tool calling.
    """

    provider: str = ""
    model_name: str = ""
    supports_tools: bool = True
    protocol_options: dict[str, dict[str, Any]] = {}
    """Keyword arguments for the text protocols when built for this model, by protocol
    name (e.g. ``{"json": {"max_thought": 300}}`` to bound a small model's thoughts)."""

    @abc.abstractmethod
    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ModelOutput:
        """Send one request and return the model's output."""

    async def generate_stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> AsyncIterator[StreamDelta | ModelOutput]:
        """Send one request and yield the reply as it is written: :class:`TextDelta`\\ s
        and :class:`ReasoningDelta`\\ s, then the complete :class:`ModelOutput` (last,
        exactly once; the deltas' text adds up to its text and reasoning).

        The default calls :meth:`generate` and yields its reasoning and text as one
        delta each: every provider streams, the ones that override this token by token.
        An error raised here is classified by :meth:`classify_error` like one of
        :meth:`generate` (see :mod:`loopwright.model._stream` for what a stream cut after
        text reached the consumer becomes).
        """
        output = await self.generate(messages, tools, config)
        if output.message.reasoning:
            yield ReasoningDelta(output.message.reasoning)
        if output.message.text:
            yield TextDelta(output.message.text)
        yield output

    def classify_error(self, error: BaseException) -> RetryDecision:
        """Say whether ``error`` (raised by :meth:`generate`) is worth retrying.

        The default retries :class:`ModelAPIError`s marked retryable and network-level
        failures (connection errors, timeouts); providers refine it for their SDK errors.
        A connection refused by a server on this machine is retried at most
        :data:`LOCAL_REFUSED_RETRIES` times (:func:`refused_on_this_machine`).
        """
        if refused_on_this_machine(error):
            return RetryDecision(True, max_retries=LOCAL_REFUSED_RETRIES)
        if isinstance(error, ModelAPIError):
            return RetryDecision(error.retryable, error.retry_after)
        if isinstance(error, (ConnectionError, TimeoutError)):
            return RetryDecision(True)
        try:
            import httpx
        except ImportError:  # pragma: no cover - httpx is a dependency
            return RetryDecision(False)
        if isinstance(error, httpx.TransportError):
            return RetryDecision(True)
        return RetryDecision(False)

    def secrets(self) -> Sequence[str]:
        """The credentials this model sends (API keys, passwords, auth header values):
        they are redacted from its error messages, from the errors recorded for its
        calls, and from every row of a run store it is called while recording into
        (values of 8 characters or more). Default: none. Providers that hold a
        credential return it: the openai and anthropic providers return their key, the
        password of their base URL (and its user when it has none or looks like a
        token), and the values of their extra headers."""
        return ()

    def connection_key(self) -> str:
        """Calls sharing this key share one concurrency limit (default: the provider)."""
        return self.provider

    def default_max_connections(self) -> int:
        """Concurrent calls allowed when the config does not say (default 10)."""
        return 10

    async def aclose(self) -> None:
        """Release clients and connections (default: nothing to release)."""
        return None

    @property
    def name(self) -> str:
        """``provider/model_name``."""
        return f"{self.provider}/{self.model_name}" if self.model_name else self.provider
