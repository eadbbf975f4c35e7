"""Generation settings, mergeable with precedence call > model > default."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_MAX_TOOL_OUTPUT",
    "DEFAULT_TIMEOUT",
    "GenerateConfig",
    "ToolChoice",
    "ToolFunction",
]

DEFAULT_MAX_TOOL_OUTPUT = 16 * 1024
"""Tool output longer than this many bytes is cut in the middle (16 KiB)."""

DEFAULT_TIMEOUT = 300.0
"""Seconds one attempt of a model call may take in all, when no config sets it (5
minutes: room for a long reply from a slow or reasoning model, and an end to a server
that hangs or sends a byte now and then)."""


class ToolFunction(BaseModel):
    """Force the model to call the tool with this name."""

    model_config = ConfigDict(defer_build=True)

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "any"] | ToolFunction
"""``auto`` (the model decides), ``none`` (no tools), ``any`` (some tool must be called), or
a :class:`ToolFunction` naming the one tool to call."""


class GenerateConfig(BaseModel):
    """Settings for model calls. Every field is optional: ``None`` means "not set here".

    Configs merge with :meth:`merge`: the argument's set fields win. ``Model`` merges the
    call's config over the model's over the defaults, so a call can override anything.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling mass."""
    max_tokens: int | None = Field(default=None, gt=0)
    """The most tokens the model may generate in one call."""
    stop_seqs: list[str] | None = None
    """Sequences that end generation when produced."""
    seed: int | None = None
    """Random seed, for providers that honour it."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one attempt of a model call may take in all: connecting, waiting and
    reading the whole reply (default :data:`DEFAULT_TIMEOUT`, 300). ``Model`` enforces
    it around the attempt, so a server that drips bytes cannot outlast it; a timed-out
    attempt is retried like other transient failures. ``float("inf")`` lifts it."""
    max_retries: int | None = Field(default=None, ge=0)
    """How many times a retryable failure is retried (default 5)."""
    retry_wait: float | None = Field(default=None, ge=0)
    """Initial backoff in seconds; it doubles each retry, with jitter (default 1)."""
    max_retry_wait: float | None = Field(default=None, ge=0)
    """The longest single wait between retries, in seconds (default 60). It caps the
    server's ``Retry-After`` too: a longer one is not waited, the call fails at once
    (a fallback model then answers) with an error naming the wait asked for."""
    max_connections: int | None = Field(default=None, gt=0)
    """Concurrent calls allowed to one provider (default: the provider's own)."""
    max_tool_output: int | None = Field(default=None, ge=0)
    """Tool output longer than this many bytes is truncated (default 16 KiB; 0: never)."""
    max_output_chars: int | None = Field(default=None, gt=0)
    """Model output text beyond this many characters is cut, with a marker, before it is
    parsed or stored (default 1,000,000)."""
    max_tool_calls: int | None = Field(default=None, gt=0)
    """At most this many tool calls of one reply run; the model is told the rest were
    dropped (default 64)."""
    tool_choice: ToolChoice | None = None
    """Which tool the model may or must call."""
    parallel_tool_calls: bool | None = None
    """Whether the model may ask for several tool calls in one message."""
    response_schema: dict[str, Any] | None = None
    """A JSON schema the reply's text must follow. Backends with constrained decoding
    (llama.cpp grammars, OpenAI ``response_format``) enforce it; others ignore it. The
    ``json`` tool protocol sets it."""
    extra_body: dict[str, Any] | None = None
    """Provider-specific request fields, passed through as they are."""

    def merge(self, other: GenerateConfig | None) -> GenerateConfig:
        """A new config: this one with every field set in ``other`` overriding it."""
        if other is None:
            return self
        updates = {k: getattr(other, k) for k in other.model_fields_set}
        updates = {k: v for k, v in updates.items() if v is not None}
        if not updates:
            return self
        return self.model_copy(update=updates)
