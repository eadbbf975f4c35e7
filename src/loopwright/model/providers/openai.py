"""OpenAI, and every server that speaks OpenAI's chat-completions API.

``openai/<model>`` uses the official ``openai`` SDK (``pip install 'loopwright[openai]'``)::

    lw.get_model("openai/gpt-4o-mini")                       # $OPENAI_API_KEY
    lw.get_model("openai/my-model", base_url="http://127.0.0.1:8000/v1", api_key="...")

``base_url`` and ``api_key`` default to ``$OPENAI_BASE_URL`` and ``$OPENAI_API_KEY``; a key
is required for OpenAI itself, optional with another base URL (local servers need none).

Named shortcuts configure common OpenAI-compatible servers. Each reads its base URL and
key from the environment variables below (``base_url=`` / ``api_key=`` arguments win):

- ``ollama/<model>``: Ollama, ``http://localhost:11434/v1`` (``$OLLAMA_BASE_URL``; no key, or
  ``$OLLAMA_API_KEY`` if your proxy wants one).
- ``vllm/<model>``: vLLM, ``http://localhost:8000/v1`` (``$VLLM_BASE_URL``); key optional
  (``$VLLM_API_KEY``, when the server was started with ``--api-key``).
- ``llamacpp-server/<model>``: llama.cpp's server, ``http://localhost:8000/v1``
  (``$LLAMACPP_BASE_URL``; ``python -m llama_cpp.server`` listens on 8000, the C++
  ``llama-server`` on 8080); key optional (``$LLAMACPP_API_KEY``). Assistant messages
  that only call tools are sent with ``content: ""`` from the start, and
  ``response_schema`` as a ``json_object`` response format with a ``schema`` (the form
  both llama.cpp servers take).
- ``groq/<model>``: Groq, ``https://api.groq.com/openai/v1`` (``$GROQ_BASE_URL``); key
  required: ``$GROQ_API_KEY``.
- ``openrouter/<vendor>/<model>``: OpenRouter, ``https://openrouter.ai/api/v1``
  (``$OPENROUTER_BASE_URL``); key required: ``$OPENROUTER_API_KEY``.
- ``together/<vendor>/<model>``: Together AI, ``https://api.together.xyz/v1``
  (``$TOGETHER_BASE_URL``); key required: ``$TOGETHER_API_KEY``.

``strict_tools=True`` sends tools in OpenAI's strict mode (``"strict": true``, each schema
made strict by :func:`~loopwright.strict_schema`): the server then holds the model's
arguments to the schema; a ``null`` for an optional parameter means "use the default".

What the provider does for you: tools, ``tool_choice`` (``any`` is sent as
``required``), ``parallel_tool_calls``, stop sequences, seed and ``max_tokens`` (sent as
``max_completion_tokens`` to OpenAI itself, ``max_tokens`` elsewhere) are passed through;
``response_schema`` becomes a ``json_schema`` ``response_format``; ``finish_reason`` maps
to :data:`~loopwright.StopReason`; usage (cached and reasoning tokens too) is recorded
(unknown if a count is negative, not whole or absurd: :mod:`._tokens`). Tool-call
arguments that are not a JSON object become ``ToolCall.parse_error``. A context-length
error comes back as an output with ``stop_reason="model_length"``. Streamed, the request
carries ``stream: true`` and ``stream_options.include_usage`` (:mod:`._openai_stream`).
Rate limits, overload, 5xx and connection failures are retried by :class:`~loopwright.Model`
(a ``Retry-After`` beyond ``max_retry_wait`` fails the call at once); the SDK's retries are
off. A request the server calls invalid (400, 404, 422, or a 5xx whose body names a
validation or invalid-request error) is not retried; a body that is not JSON or not UTF-8
is a retryable :class:`~loopwright.ModelAPIError`. No redirect is followed (a 3xx is an
error naming its target), a reply or a stream's event is read up to 64 MiB decoded
(:mod:`._http_bounds`), through a client given as ``http_client=`` too (:mod:`._user_client`).

An assistant message that only calls tools is sent with ``content: null`` (OpenAI's
form; llama-cpp-python's server answers it with HTTP 500, some gateways refuse ``""``):
a 400, 422 or 500 for such a request sends it again at once with ``""``, and ``""`` from
then on if that works (``null_content=True`` / ``False`` fixes the choice). Lone
surrogates (which UTF-8 cannot carry) are replaced with U+FFFD, in replies and requests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..._errors import (
    ConfigurationError,
    MissingCredentialsError,
    MissingDependencyError,
    ModelAPIError,
)
from .._api import ModelAPI
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput
from .._redact import credentials, split_credentials
from .._stream import StreamDelta
from ._http_errors import (
    failure_cause,
    is_context_length_error,
    malformed_reply,
    reply_start,
    sdk_failure,
)
from ._openai_convert import WireCache, messages_to_openai, output_from_openai, request_options
from ._openai_stream import stream_chat
from ._sdk_clients import PerLoopClients
from ._strict_tools import StrictTools
from ._wire_text import valid_body

if TYPE_CHECKING:
    import openai as openai_sdk

__all__ = [
    "COMPATIBLE_SERVERS",
    "CompatibleServer",
    "OpenAIAPI",
    "groq",
    "llamacpp_server",
    "ollama",
    "openrouter",
    "together",
    "vllm",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_NO_KEY = "not-needed"  # what we send to servers that need no key
_MAX_FALLBACKS = 2  # resends with content "" that failed too, before no more are tried


@dataclass(frozen=True, slots=True)
class CompatibleServer:
    """How a named OpenAI-compatible server is reached (see the module documentation)."""

    base_url: str
    base_url_env: str
    api_key_env: str
    key_required: bool
    null_content: bool | None = None
    """How an assistant message with tool calls and no text is sent: ``content: null``
    (True), ``""`` (False), or null with a fall back to ``""`` (None, see the module
    documentation)."""
    schema_format: str = "json_schema"
    """How ``response_schema`` is sent: ``json_schema`` (OpenAI's ``response_format``) or
    ``json_object`` with a ``schema`` field (llama-cpp-python's server)."""


COMPATIBLE_SERVERS: dict[str, CompatibleServer] = {
    "ollama": CompatibleServer(
        "http://localhost:11434/v1", "OLLAMA_BASE_URL", "OLLAMA_API_KEY", False
    ),
    "vllm": CompatibleServer("http://localhost:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY", False),
    # llama-cpp-python's server answers HTTP 500 to an assistant message with content null
    "llamacpp-server": CompatibleServer(
        "http://localhost:8000/v1",
        "LLAMACPP_BASE_URL",
        "LLAMACPP_API_KEY",
        False,
        null_content=False,
        schema_format="json_object",
    ),
    "groq": CompatibleServer(
        "https://api.groq.com/openai/v1", "GROQ_BASE_URL", "GROQ_API_KEY", True
    ),
    "openrouter": CompatibleServer(
        "https://openrouter.ai/api/v1", "OPENROUTER_BASE_URL", "OPENROUTER_API_KEY", True
    ),
    "together": CompatibleServer(
        "https://api.together.xyz/v1", "TOGETHER_BASE_URL", "TOGETHER_API_KEY", True
    ),
}
"""The named shortcuts: provider name -> how to reach it."""


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError as ex:
        raise MissingDependencyError(
            "the openai provider needs the openai SDK: pip install 'loopwright[openai]'"
        ) from ex
    return openai


class OpenAIAPI(ModelAPI):
    """A model behind OpenAI's chat-completions API. See the module documentation."""

    provider = "openai"
    supports_tools = True

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        null_content: bool | None = None,
        max_tokens_param: str | None = None,
        strict_tools: bool = False,
        default_headers: Mapping[str, str] | None = None,
        provider: str = "openai",
        **client_args: Any,
    ) -> None:
        """
        Args:
            model_name: The model, as the server names it (``gpt-4o-mini``).
            base_url: The API's base URL (default ``$OPENAI_BASE_URL``, else OpenAI's, or
                the named server's).
            api_key: The key (default from the provider's environment variable).
            null_content: Send ``content: null`` for assistant messages that only call
                tools (True) or ``""`` (False). Default: null, and ``""`` from the first
                time the server rejects null on (see the module documentation).
            max_tokens_param: The request field for ``max_tokens`` (default
                ``max_completion_tokens`` for OpenAI itself, ``max_tokens`` elsewhere).
            strict_tools: Send tools in strict mode (``"strict": true``, with the
                schema :func:`~loopwright.strict_schema` makes), so the server holds the
                arguments to the schema. A tool whose schema has no strict form is sent
                as it is (a warning says so).
            default_headers: Extra HTTP headers for every request.
            provider: The registry name (set by the named shortcuts).
            **client_args: Passed to ``openai.AsyncOpenAI`` (``organization``, an
                ``http_client`` of yours: used unchanged, with our protections).

        Raises:
            MissingDependencyError: The ``openai`` SDK is not installed.
            MissingCredentialsError: No API key where one is required.
        """
        if not model_name:
            raise ConfigurationError(
                f"name the model: '{provider}/<model>' (e.g. 'openai/gpt-4o-mini')"
            )
        self._sdk = _import_sdk()
        self.provider = provider
        self.model_name = model_name
        server = COMPATIBLE_SERVERS.get(provider)
        if server is None:  # OpenAI itself, or any server through base_url
            url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
            self._key_env = "OPENAI_API_KEY"
            key_required = url.rstrip("/") == OPENAI_BASE_URL
            default_null: bool | None = None
            self._schema_format = "json_schema"
        else:
            url = base_url or os.environ.get(server.base_url_env) or server.base_url
            self._key_env = server.api_key_env
            key_required = server.key_required
            default_null = server.null_content
            self._schema_format = server.schema_format
        key = api_key or os.environ.get(self._key_env)
        if not key:
            if key_required:
                raise MissingCredentialsError(
                    f"{provider}/{model_name} needs an API key: set ${self._key_env} (or pass "
                    "api_key=...)"
                )
            key = _NO_KEY
        clean, basic = split_credentials(url.rstrip("/"))
        self.base_url = clean
        """The API's base URL, without credentials (``user:password@`` is sent as an
        ``Authorization: Basic`` header, unless ``default_headers`` has one)."""
        self._api_key = key
        self._null_content = default_null if null_content is None else null_content
        self._failed_fallbacks = 0
        self._max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if self.base_url == OPENAI_BASE_URL else "max_tokens"
        )
        headers = dict(default_headers or {})
        if basic is not None and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = basic
        self._headers = headers or None
        self._secrets = credentials(key if key != _NO_KEY else None, url, headers)
        if not isinstance(strict_tools, bool):
            raise ConfigurationError(f"strict_tools must be True or False, got {strict_tools!r}")
        self._strict = StrictTools(self.name) if strict_tools else None
        self._client_args = client_args
        self._wire = WireCache()  # messages sent before are not converted again
        self._clients: PerLoopClients[openai_sdk.AsyncOpenAI] = PerLoopClients(
            self._sdk.AsyncOpenAI,
            self._sdk.DefaultAsyncHttpxClient,
            api_key=self._api_key,
            base_url=self.base_url,
            headers=self._headers,
            client_args=self._client_args,
        )

    def _client(self) -> openai_sdk.AsyncOpenAI:
        return self._clients.get()

    def __repr__(self) -> str:
        return f"OpenAIAPI({self.name!r}, base_url={self.base_url!r})"

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
        body, options = self._request(messages, tools, config)
        try:
            response = await self._send(body, messages, options)
        except Exception as ex:
            failure = self._failure(ex, config)
            if failure is ex:
                raise
            if isinstance(failure, ModelOutput):
                return failure
            raise failure from failure_cause(self._sdk, ex)
        try:
            output = output_from_openai(response, tools, self.name)
        except (AttributeError, TypeError, KeyError, ValueError) as ex:
            raise malformed_reply(self.name, response, ex, self._secrets) from ex
        if output is None:
            raise ModelAPIError(
                f"{self.name}: the response had no choices: "
                f"{reply_start(response, self._secrets, 300)}",
                retryable=True,
            )
        return output

    def _request(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolInfo], config: GenerateConfig
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body and the SDK's request options."""
        opts = request_options(
            config,
            tools,
            max_tokens_param=self._max_tokens_param,
            schema_format=self._schema_format,
            strict=self._strict,
        )
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages_to_openai(
                messages, null_content=self._null_content is not False, cache=self._wire
            ),
            **opts,
        }
        body.update(body.pop("extra_body", None) or {})
        options: dict[str, Any] = {}
        if config.timeout is not None and config.timeout != float("inf"):
            options["timeout"] = config.timeout  # per read; Model bounds the whole call
        return body, options

    def _failure(self, ex: Exception, config: GenerateConfig) -> Any:
        """What a failed request becomes: an error to raise (``ex`` itself when the SDK
        has nothing to add), or an output (``model_length``) to return."""
        failure = sdk_failure(
            self._sdk,
            ex,
            model=self.name,
            base_url=self.base_url,
            key_env=self._key_env,
            timeout=config.timeout,
            secrets=self._secrets,
        )
        return ex if failure is None else failure

    def generate_stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> AsyncIterator[StreamDelta | ModelOutput]:
        """Chat completions with ``stream: true``: see
        :func:`~loopwright.model.providers._openai_stream.stream_chat`."""
        return stream_chat(self, messages, tools, config)

    async def _post(self, body: dict[str, Any], options: dict[str, Any], stream: bool) -> Any:
        # posted as it is: chat.completions.create() walks the body through the SDK's type
        # transform (~0.15 ms a message: per-step CPU grew), and ours is wire JSON already
        sdk = self._sdk
        chat = sdk.types.chat
        streamed = {"stream": True, "stream_cls": sdk.AsyncStream[chat.ChatCompletionChunk]}
        return await self._client().post(
            "/chat/completions",
            cast_to=chat.ChatCompletion,
            body=body,
            options=cast(Any, options),
            **(streamed if stream else {}),
        )

    async def _send(
        self,
        body: dict[str, Any],
        messages: Sequence[ChatMessage],
        options: dict[str, Any],
        stream: bool = False,
    ) -> Any:
        """Post ``body``; send it once more, mended, if it cannot be encoded (a lone
        surrogate) or if the server rejects ``content: null`` (see the module docs)."""
        mended = fell_back = False
        while True:
            try:
                response = await self._post(body, options, stream)
            except UnicodeEncodeError:
                if mended:
                    raise
                mended = True
                body = valid_body(body)
                continue
            except self._sdk.APIStatusError as ex:
                if fell_back:
                    self._failed_fallbacks += 1  # "" did not help: null was not it
                    raise
                if not self._rejects_null(ex, body):
                    raise
                fell_back = True
                wire = messages_to_openai(messages, null_content=False, cache=self._wire)
                body["messages"] = valid_body(wire) if mended else wire
                continue
            if fell_back:
                self._null_content = False  # this server takes "" (and not null)
            return response

    def _rejects_null(self, error: Exception, body: dict[str, Any]) -> bool:
        """Whether ``error`` may be the server refusing ``content: null``: null is sent by
        default (not chosen), the request had one, and the server said 400, 422 or 500,
        not about the context length. After two fallbacks that did not help, no more."""
        if self._null_content is not None or self._failed_fallbacks >= _MAX_FALLBACKS:
            return False
        if getattr(error, "status_code", None) not in (400, 422, 500):
            return False
        if is_context_length_error(error):
            return False
        return any(
            m.get("role") == "assistant" and m.get("content") is None for m in body["messages"]
        )

    async def aclose(self) -> None:
        await self._clients.aclose()


def _shortcut(provider: str, model_name: str, **kwargs: Any) -> OpenAIAPI:
    return OpenAIAPI(model_name, provider=provider, **kwargs)


def ollama(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``ollama/<model>``: a local Ollama server (``$OLLAMA_BASE_URL``)."""
    return _shortcut("ollama", model_name, **kwargs)


def vllm(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``vllm/<model>``: a vLLM server (``$VLLM_BASE_URL``, ``$VLLM_API_KEY``)."""
    return _shortcut("vllm", model_name, **kwargs)


def llamacpp_server(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``llamacpp-server/<model>``: a llama.cpp server (``$LLAMACPP_BASE_URL``)."""
    return _shortcut("llamacpp-server", model_name, **kwargs)


def groq(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``groq/<model>``: Groq's API (``$GROQ_API_KEY``)."""
    return _shortcut("groq", model_name, **kwargs)


def openrouter(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``openrouter/<model>``: OpenRouter (``$OPENROUTER_API_KEY``)."""
    return _shortcut("openrouter", model_name, **kwargs)


def together(model_name: str, **kwargs: Any) -> OpenAIAPI:
    """``together/<model>``: Together AI (``$TOGETHER_API_KEY``)."""
    return _shortcut("together", model_name, **kwargs)
