"""``get_model()``: model names to :class:`Model`\\ s, through a registry of providers."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, TypeAlias

from .._contexts import var_set
from .._errors import ConfigurationError, ProviderNotFoundError
from .._registry import LazyRegistry
from ._api import ModelAPI
from ._config import GenerateConfig
from ._model import Model
from .protocols import ToolProtocol

__all__ = [
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "default_model",
    "get_model",
    "provider_names",
    "register_provider",
]

ENTRY_POINT_GROUP = "loopwright.providers"
"""Third-party packages register providers under this entry point group: the entry
point's name is the provider name, its object a :data:`ProviderFactory`."""

ProviderFactory: TypeAlias = Callable[..., ModelAPI]
"""``factory(model_name: str, **kwargs) -> ModelAPI``."""

# Built-in providers, as import paths so that no provider SDK is imported until used.
_BUILTIN: dict[str, str] = {
    "mock": "loopwright.model.providers.mock:MockModelAPI",
    "replay": "loopwright.log._replay:replay_model",  # reads the run store (log/)
    "local": "loopwright.model.providers.local:LocalModelAPI",
    "openai": "loopwright.model.providers.openai:OpenAIAPI",
    "anthropic": "loopwright.model.providers.anthropic:AnthropicAPI",
    # OpenAI-compatible servers, by name (see loopwright.model.providers.openai)
    "ollama": "loopwright.model.providers.openai:ollama",
    "vllm": "loopwright.model.providers.openai:vllm",
    "llamacpp-server": "loopwright.model.providers.openai:llamacpp_server",
    "groq": "loopwright.model.providers.openai:groq",
    "openrouter": "loopwright.model.providers.openai:openrouter",
    "together": "loopwright.model.providers.openai:together",
}
_providers: LazyRegistry[ProviderFactory] = LazyRegistry(
    "model provider", ENTRY_POINT_GROUP, _BUILTIN, callable, "a ModelAPI factory (a callable)"
)

_default: ContextVar[Model | str | None] = ContextVar("loopwright_default_model", default=None)

DEFAULT_MODEL_ENV = "LOOPWRIGHT_MODEL"
FALLBACK_MODEL = "local"


def register_provider(
    name: str, factory: ProviderFactory | str | None = None
) -> Any:  # returns the factory, or a decorator
    """Register a provider under ``name``.

    ``factory(model_name, **kwargs)`` returns a :class:`ModelAPI`; it may be given as an
    ``"module:attribute"`` string to import lazily. Usable as a decorator::

        @lw.register_provider("echo")
        class EchoAPI(lw.ModelAPI): ...
    """
    if not isinstance(name, str) or not name or any(c in name for c in "/:"):
        raise ConfigurationError(f"provider name {name!r} must be non-empty without '/' or ':'")

    def add(f: ProviderFactory | str) -> ProviderFactory | str:
        _providers.add(name, f)
        return f

    return add if factory is None else add(factory)


def provider_names() -> list[str]:
    """The names of every registered provider, entry points included."""
    return _providers.names()


def _resolve(provider: str) -> ProviderFactory:
    factory = _providers.get(provider)
    if factory is None:
        raise ProviderNotFoundError(
            f"unknown model provider {provider!r}; known providers: "
            f"{', '.join(provider_names())}. Name a model as 'provider/model' "
            f"(e.g. 'openai/gpt-4o-mini'), or register one with lw.register_provider()"
        )
    return factory


def split_model_name(name: str) -> tuple[str, str]:
    """``"openai/gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"local:/m.gguf"`` -> local."""
    cut = [i for i in (name.find("/"), name.find(":")) if i >= 0]
    if not cut:
        return name, ""
    i = min(cut)
    return name[:i], name[i + 1 :]


def get_model(
    name: str | Model | None = None,
    *,
    config: GenerateConfig | None = None,
    tool_protocol: ToolProtocol | str | None = None,
    fallbacks: Sequence[str | Model] = (),
    **kwargs: Any,
) -> Model:
    """Get a model by name.

    Args:
        name: ``"provider/model"`` (e.g. ``"openai/gpt-4o-mini"``, ``"mock"``,
            ``"local"``, ``"local:/path/model.gguf"``), or a :class:`Model` (returned as
            is). ``None`` gives the current default: the run's model if one is set
            (:func:`default_model`), else ``$LOOPWRIGHT_MODEL``, else ``"local"``.
        config: Settings for every call of this model.
        tool_protocol: How tools reach the model: ``"native"`` (the provider's tool
            calling), ``"react"`` (Thought/Action/Observation text), ``"json"`` (one
            JSON action per turn, grammar-constrained where the backend allows), a name
            given to :func:`~loopwright.register_protocol`, or a
            :class:`~loopwright.model.protocols.ToolProtocol`. Default: ``native`` where
            the provider supports tool calling, else ``json``.
        fallbacks: Models (names or :class:`Model` objects, each built with its own
            defaults) that answer a call this model fails after its retries or is out of
            quota for, tried in order; ``ModelOutput.model`` says which answered
            (:mod:`loopwright.model._fallback`). A fallback's own fallbacks are not used.
        **kwargs: Passed to the provider (e.g. ``outputs=`` for ``mock``,
            ``base_url=`` and ``api_key=`` for ``openai``).

    Raises:
        ProviderNotFoundError: No provider of that name is registered.
        ConfigurationError: An unknown ``tool_protocol``, or ``native`` for a provider
            without tool calling.
    """
    if isinstance(fallbacks, str) or not isinstance(fallbacks, Sequence):
        raise ConfigurationError(
            f"fallbacks must be a list of model names or Models, got {fallbacks!r}"
        )
    if isinstance(name, Model):
        if config is not None or kwargs or tool_protocol is not None or fallbacks:
            raise ConfigurationError(
                "config, tool_protocol, fallbacks and provider arguments need a model name, "
                "not a Model"
            )
        return name
    if name is None:
        current = _default.get()
        if isinstance(current, Model) and config is None and not kwargs and tool_protocol is None:
            return current
        name = (
            current.name
            if isinstance(current, Model)
            else current or os.environ.get(DEFAULT_MODEL_ENV) or FALLBACK_MODEL
        )
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"model name must be a non-empty string, got {name!r}")
    provider, model_name = split_model_name(name.strip())
    factory = _resolve(provider)
    api = factory(model_name, **kwargs)
    if not isinstance(api, ModelAPI):
        raise ConfigurationError(f"provider {provider!r} returned {api!r}, not a ModelAPI")
    backups = [get_model(f) for f in fallbacks]
    return Model(api, config, tool_protocol, fallbacks=backups)


def default_model(model: Model | str | None) -> AbstractContextManager[None]:
    """Make ``model`` what ``get_model()`` with no name returns, within this context."""
    return var_set(_default, model, None)
