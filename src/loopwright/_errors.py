"""The exception hierarchy of loopwright.

Every exception loopwright raises on purpose derives from :class:`LoopwrightError`, and
its message says what went wrong and what to do about it.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "LoopwrightError",
    "MissingCredentialsError",
    "MissingDependencyError",
    "ModelAPIError",
    "ModelError",
    "ModelTimeoutError",
    "ProviderNotFoundError",
    "ScriptExhaustedError",
]


def error_text(error: BaseException) -> str:
    """How an error is recorded and shown everywhere: ``Type: message`` (``Type`` alone
    when the message is empty)."""
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


class LoopwrightError(Exception):
    """Base class of every error loopwright raises on purpose."""


class ConfigurationError(LoopwrightError, ValueError):
    """An argument or configuration value is invalid."""


class ProviderNotFoundError(ConfigurationError):
    """A model name names a provider that is not registered."""


class MissingCredentialsError(ConfigurationError):
    """A provider needs a credential (an API key) that was not given."""


class MissingDependencyError(LoopwrightError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ModelError(LoopwrightError):
    """A model call failed."""


class ModelAPIError(ModelError):
    """An error reported by a model provider.

    Providers raise it (or subclasses) to tell :class:`~loopwright.Model` whether the
    call may be retried and, for rate limits, how long the provider asked us to wait.

    Attributes:
        retryable: Whether the same request may succeed if sent again.
        retry_after: Seconds the provider asked to wait before retrying (``Retry-After``).
        status_code: The HTTP status, when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status_code = status_code


class ModelTimeoutError(ModelError, TimeoutError):
    """A model call took longer than its timeout."""


class ScriptExhaustedError(ModelError):
    """The scripted ``mock`` model was asked for more outputs than its script holds."""


class StrictSchemaError(ConfigurationError):
    """A JSON schema cannot be expressed in the strict form (see ``strict_schema``)."""
