"""Anthropic's models through the official ``anthropic`` SDK.

``anthropic/<model>`` (``pip install 'loopwright[anthropic]'``)::

    lw.get_model("anthropic/claude-sonnet-4-5")       # $ANTHROPIC_API_KEY

``api_key`` and ``base_url`` arguments override ``$ANTHROPIC_API_KEY`` and
``$ANTHROPIC_BASE_URL``.

What the provider does for you: leading system messages become the ``system`` prompt;
tool calls and results travel as ``tool_use`` / ``tool_result`` blocks (a failed call's
result with ``is_error``), the results of parallel calls in one user turn; tool choice
and ``parallel_tool_calls=False`` (``disable_parallel_tool_use``) are passed on. The API
requires ``max_tokens``: when the config does not set it, :data:`DEFAULT_MAX_TOKENS` is
sent. ``stop_reason`` maps to :data:`~loopwright.StopReason` (``end_turn`` and
``stop_sequence``: ``stop``; ``tool_use``: ``tool_calls``; ``refusal``:
``content_filter``; ``model_context_window_exceeded``: ``model_length``; ``pause_turn``:
``unknown``). Thinking blocks become the message's ``reasoning``. Usage counts cached
input in ``input_tokens`` and also apart (``cache_read_tokens``, ``cache_write_tokens``);
a count that is negative, not whole or absurd makes the usage unknown (:mod:`._tokens`).
``seed`` and ``response_schema`` are not supported by the API and are ignored. Errors are
classified for :class:`~loopwright.Model`'s retries as for the openai provider (429 and
529 overload honour a ``Retry-After`` within ``max_retry_wait``; one beyond fails the
call at once); "prompt is too long" comes back as an output with
``stop_reason="model_length"``. A 200 whose body is no message (an HTML page, ``{}``) is a
retryable :class:`~loopwright.ModelAPIError`, not an empty reply. Streamed
(``lw.run_stream``, ``loopwright run``), the SDK's ``messages.stream`` gives the text and
thinking deltas as they come. An ``error`` event in the stream (after its 200) is retried when it
says the API is overloaded, rate limited or failing (``overloaded_error``...), not otherwise.
No redirect is followed and a reply, or an event of its stream, is read up to 64 MiB
decoded, through a client given as ``http_client=`` too (:mod:`._user_client`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._errors import (
    ConfigurationError,
    MissingCredentialsError,
    MissingDependencyError,
    ModelAPIError,
)
from .._api import ModelAPI
from .._bounds import output_char_limit
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput
from .._redact import credentials, split_credentials
from .._stream import ReasoningDelta, StreamDelta, TextDelta
from ._anthropic_convert import (
    cut_reply,
    messages_to_anthropic,
    output_from_anthropic,
    request_options,
)
from ._http_errors import (
    MALFORMED,
    failure_cause,
    malformed_reply,
    sdk_failure,
    stream_broke,
)
from ._sdk_clients import PerLoopClients
from ._wire_text import valid_body, valid_text

if TYPE_CHECKING:
    import anthropic as anthropic_sdk

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicAPI"]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when the config sets none (the API requires one)."""

DEFAULT_TIMEOUT = 600.0
"""Seconds per request when the config sets no timeout. Always passing one also stops
the SDK from refusing non-streaming requests with a large ``max_tokens``."""

ANTHROPIC_BASE_URL = "https://api.anthropic.com"

# the SDK's stream events of a reply's pieces: their kind -> the field with the piece
_PIECES = {"text": "text", "thinking": "thinking", "input_json": "partial_json"}


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError as ex:
        raise MissingDependencyError(
            "the anthropic provider needs the anthropic SDK: pip install 'loopwright[anthropic]'"
        ) from ex
    return anthropic


class AnthropicAPI(ModelAPI):
    """A model behind Anthropic's Messages API. See the module documentation."""

    provider = "anthropic"
    supports_tools = True

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        default_headers: Mapping[str, str] | None = None,
        **client_args: Any,
    ) -> None:
        """
        Args:
            model_name: The model (``claude-sonnet-4-5``...).
            base_url: The API's base URL (default ``$ANTHROPIC_BASE_URL``, else
                Anthropic's).
            api_key: The key (default ``$ANTHROPIC_API_KEY``).
            default_headers: Extra HTTP headers for every request (e.g. beta flags).
            **client_args: Passed to ``anthropic.AsyncAnthropic`` (an ``http_client``
                of yours is used unchanged, with our protections: module documentation).

        Raises:
            MissingDependencyError: The ``anthropic`` SDK is not installed.
            MissingCredentialsError: No API key.
        """
        if not model_name:
            raise ConfigurationError(
                "name the model: 'anthropic/<model>' (e.g. 'anthropic/claude-sonnet-4-5')"
            )
        self._sdk = _import_sdk()
        self.model_name = model_name
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise MissingCredentialsError(
                f"anthropic/{model_name} needs an API key: set $ANTHROPIC_API_KEY (or pass "
                "api_key=...)"
            )
        self._api_key = key
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        # credentials in the URL are sent as httpx would (Basic auth), kept out of the
        # URL that httpx logs and errors show
        clean, basic = split_credentials(url.rstrip("/"))
        self.base_url = clean
        """The API's base URL, without credentials (``user:password@`` is sent as an
        ``Authorization: Basic`` header, unless ``default_headers`` has one)."""
        headers = dict(default_headers or {})
        if basic is not None and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = basic
        self._headers = headers or None
        self._secrets = credentials(key, url, headers)
        self._client_args = client_args
        self._clients: PerLoopClients[anthropic_sdk.AsyncAnthropic] = PerLoopClients(
            self._sdk.AsyncAnthropic,
            self._sdk.DefaultAsyncHttpxClient,
            api_key=self._api_key,
            base_url=self.base_url,
            headers=self._headers,
            client_args=self._client_args,
        )

    def _client(self) -> anthropic_sdk.AsyncAnthropic:
        return self._clients.get()

    def __repr__(self) -> str:
        return f"AnthropicAPI({self.name!r}, base_url={self.base_url!r})"

    def secrets(self) -> Sequence[str]:
        """The key, the base URL's password (and a token as its user), the headers' values."""
        return self._secrets

    def connection_key(self) -> str:
        return f"{self.provider}:{self.base_url}"

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ModelOutput:
        request, timeout = self._request(messages, tools, config)
        try:
            try:
                response = await self._client().messages.create(**request, timeout=timeout)
            except UnicodeEncodeError:  # a lone surrogate: send it replaced (U+FFFD)
                request = valid_body(request)
                response = await self._client().messages.create(**request, timeout=timeout)
        except Exception as ex:
            failure = self._failure(ex, config)
            if failure is ex:
                raise
            if isinstance(failure, ModelOutput):
                return failure
            raise failure from failure_cause(self._sdk, ex)
        try:
            return output_from_anthropic(response, tools, self.name)
        except (AttributeError, TypeError, KeyError, ValueError) as ex:
            raise malformed_reply(self.name, response, ex, self._secrets) from ex

    async def generate_stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> AsyncIterator[StreamDelta | ModelOutput]:
        """The Messages API's event stream (the SDK's ``messages.stream``): text and
        thinking deltas as they come, the output from the final message once
        ``message_stop`` arrived. A stream that ends before, or an event the SDK cannot
        place (a delta for a block that never started, before ``message_start``), is a
        retryable :class:`ModelAPIError`; tool calls come only from the final message.
        A reply whose text, thinking or tool input is longer than ``max_output_chars`` is
        read no further: its output is cut there (:func:`cut_reply`)."""
        request, timeout = self._request(messages, tools, config)
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    stream = await stack.enter_async_context(
                        self._client().messages.stream(**request, timeout=timeout)
                    )
                except UnicodeEncodeError:  # a lone surrogate: sent replaced (U+FFFD)
                    request = valid_body(request)
                    stream = await stack.enter_async_context(
                        self._client().messages.stream(**request, timeout=timeout)
                    )
                limit = output_char_limit(config)
                sizes = dict.fromkeys(("text", "thinking", "input_json"), 0)
                async for event in stream:
                    kind = getattr(event, "type", None)
                    piece = getattr(event, _PIECES.get(kind or "", "text"), None)
                    if kind in sizes and isinstance(piece, str):
                        sizes[kind] += len(piece)
                        if piece and kind == "text":
                            yield TextDelta(valid_text(piece))
                        elif piece and kind == "thinking":
                            yield ReasoningDelta(valid_text(piece))
                        if sizes[kind] > limit:  # longer than would be kept: read no more
                            break
                    elif kind == "message_stop":
                        break
                else:
                    raise ModelAPIError(
                        f"{self.name}: the stream ended before the reply was complete (no "
                        "message_stop)",
                        retryable=True,
                    )
                cut = max(sizes.values()) > limit
                if cut:
                    response = stream.current_message_snapshot
                else:
                    response = await stream.get_final_message()
        except ModelAPIError:
            raise
        except Exception as ex:
            broke = stream_broke(self.name, ex, self._secrets)
            if broke is not None:
                raise broke from ex
            failure = self._failure(ex, config)
            if isinstance(failure, ModelOutput):
                yield failure
                return
            if failure is ex and isinstance(ex, MALFORMED):  # an event of the wrong shape
                raise malformed_reply(self.name, None, ex, self._secrets) from ex
            if failure is ex:
                raise
            raise failure from failure_cause(self._sdk, ex)
        try:
            output = output_from_anthropic(response, tools, self.name)
        except (AttributeError, TypeError, KeyError, ValueError) as ex:
            raise malformed_reply(self.name, response, ex, self._secrets) from ex
        yield cut_reply(output, limit) if cut else output

    def _failure(self, ex: Exception, config: GenerateConfig) -> Any:
        """What a failed request becomes: an error to raise (``ex`` itself when the SDK
        has nothing to add), or an output (``model_length``) to return."""
        failure = sdk_failure(
            self._sdk,
            ex,
            model=self.name,
            base_url=self.base_url,
            key_env="ANTHROPIC_API_KEY",
            timeout=config.timeout,
            secrets=self._secrets,
        )
        return ex if failure is None else failure

    def _request(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolInfo], config: GenerateConfig
    ) -> tuple[dict[str, Any], float]:
        """The request's fields and the SDK's per-read timeout."""
        system, wire = messages_to_anthropic(messages)
        opts = request_options(config, tools)
        if system is not None:
            opts["system"] = system
        request: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": config.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": wire,
            **opts,
        }
        timeout = config.timeout or DEFAULT_TIMEOUT
        if timeout == float("inf"):  # no deadline: the SDK still wants one per read
            timeout = DEFAULT_TIMEOUT
        return request, timeout

    async def aclose(self) -> None:
        await self._clients.aclose()
