"""``Model``: what every provider shares — retries, timeouts, concurrency, usage, hooks."""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._contexts import var_pushed
from .._errors import ConfigurationError, ModelError, ModelTimeoutError, error_text
from .._timers import deadline
from ._api import ModelAPI
from ._bounds import bound_calls, bound_text
from ._chat import ChatMessage, ToolInfo
from ._config import DEFAULT_TIMEOUT, GenerateConfig
from ._fallback import fall_back
from ._offered import HasToolInfo, OfferedTools, offered
from ._output import ModelOutput, Usage, checked_output
from ._prices import cost_of
from ._redact import redact
from ._retry import FALLBACK_NEXT, backoff, refused_wait, too_late
from ._slots import AdaptiveSlots, slots_for
from ._step import take_step
from ._stream import ReasoningDelta, StreamSink, TextDelta, ThoughtFilter, current_sink
from ._streaming import DELIVERED, cut_at_deadline, stream_attempt
from .protocols import NativeProtocol, ToolProtocol, resolve_tool_protocol

__all__ = ["DEFAULT_CONFIG", "Model", "ModelCall", "ModelHook", "model_hook"]

_log = logging.getLogger("loopwright.model")

DEFAULT_CONFIG = GenerateConfig(
    max_retries=5, retry_wait=1.0, max_retry_wait=60.0, timeout=DEFAULT_TIMEOUT
)
"""The defaults under every model's and every call's config: 5 retries, backoff from 1 s
up to 60 s, and a deadline of :data:`~loopwright.model._config.DEFAULT_TIMEOUT` (300 s)
per attempt."""


@dataclass(slots=True, eq=False)
class ModelCall:
    """One ``Model.generate`` call, as hooks see it.

    Hooks get the same object before the call (``output`` is None) and after it (with
    ``output`` or ``error`` set).
    """

    model: Model
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolInfo]
    """The tools offered: for ``Model.generate``'s calls, one list shared by the calls
    that offer the same tools (``OfferedTools``, which refuses changes: assign another
    list to offer other tools)."""
    config: GenerateConfig
    output: ModelOutput | None = None
    error: BaseException | None = None
    retries: int = 0
    """How many times the call was retried."""
    wait_time: float = 0.0
    """Seconds spent waiting, not working: retry backoff and the concurrency queue."""
    started: float = field(default_factory=time.time)
    """Wall-clock start (seconds since the epoch)."""
    duration: float = 0.0
    """Seconds from start to end, waits included."""
    data: dict[str, Any] = field(default_factory=dict)
    """Scratch space for hooks (e.g. a transcript event id)."""
    cost: float | None = None
    """Dollars the call cost (``lw.cost_of`` of the model that answered and its usage),
    set when it succeeded; ``None`` when that model's price or the usage is unknown."""
    step: bool = False
    """The agent loop's own call for its next action (``model/_step.py``)."""


class ModelHook(Protocol):
    """Observes (and may veto) model calls: used for limits, transcripts, accounting.

    ``before_generate`` may raise (e.g. a limit is exceeded) to stop the call.
    ``after_generate`` runs after success and after failure. A hook may also define:

    - ``wait_began(call)`` and ``wait_ended(call, seconds)``: the call began and ended a
      wait that is not work (queueing for a connection slot when none is free, a retry
      backoff); ``wait_ended`` follows every ``wait_began``, also when the wait is
      cancelled. Working-time accounting uses them: calls may wait at the same time, so
      count overlapping waits once (:class:`loopwright._waits.WaitClock`).
    - ``on_wait(call, seconds)``: called before each retry backoff sleep, with its planned
      length; ``longest_wait(call)``: the longest a retry wait may last (None: no bound),
      a longer one not slept when a fallback follows (:mod:`._retry`; limits: time left).
    """

    def before_generate(self, call: ModelCall) -> None: ...

    def after_generate(self, call: ModelCall) -> None: ...


_hooks: ContextVar[tuple[ModelHook, ...]] = ContextVar("loopwright_model_hooks", default=())


def model_hook(hook: ModelHook) -> AbstractContextManager[ModelHook]:
    """Install ``hook`` for every model call made in this context (and tasks it starts)."""
    return var_pushed(_hooks, hook)


def _wait_began(call: ModelCall, began: list[Any]) -> None:
    """Tell the hooks a wait began; ``began`` collects those told (even if one raises)."""
    for hook in _hooks.get():
        fn = getattr(hook, "wait_began", None)
        if fn is not None:
            fn(call)
            began.append(hook)


def _wait_ended(call: ModelCall, began: list[Any], seconds: float) -> None:
    """Tell the hooks in ``began`` the wait ended, each even when one raises (the first
    error is raised after)."""
    error: BaseException | None = None
    for hook in began:
        try:
            hook.wait_ended(call, seconds)
        except Exception as ex:
            error = error or ex
    if error is not None:
        raise error


async def _queue(call: ModelCall, slot: AdaptiveSlots, queued: float) -> None:
    """Wait for a connection slot, telling the hooks; if anything fails, hold no slot."""
    began: list[Any] = []
    taken = False
    try:
        _wait_began(call, began)
        await slot.acquire()
        taken = True
    finally:
        try:
            _wait_ended(call, began, time.perf_counter() - queued)
        except BaseException:
            if taken:
                slot.release()
            raise


def _reason(error: BaseException, secrets: Sequence[str]) -> str:
    """An error as a retry warning states it: one line, bounded, secrets redacted."""
    text = " ".join(redact(error_text(error), secrets).split())
    return text if len(text) <= 300 else text[:300] + "..."


class Model:
    """A model to generate with: a provider's :class:`ModelAPI` plus what all share.

    ``Model`` adds to every call: config merging (call > model > defaults), retries with
    exponential backoff and jitter for errors the provider marks retryable (honouring
    a ``Retry-After`` within ``max_retry_wait``; one beyond fails the call at once,
    :mod:`._retry`), a per-provider concurrency limit (``max_connections``), a deadline
    per attempt (``GenerateConfig.timeout``, 300 s by default), usage accounting, and the
    :class:`ModelHook`\\ s that record events and enforce limits. Each retry is logged
    as a warning on the ``loopwright.model`` logger, with the reason and the wait. Get
    one with :func:`~loopwright.get_model`.
    """

    def __init__(
        self,
        api: ModelAPI,
        config: GenerateConfig | None = None,
        tool_protocol: ToolProtocol | str | None = None,
        fallbacks: Sequence[Model] = (),
    ) -> None:
        self.api = api
        self.config = config or GenerateConfig()
        self._base_config = DEFAULT_CONFIG.merge(self.config)
        self.fallbacks: tuple[Model, ...] = tuple(fallbacks)
        """Models tried in order when this one fails a call (:mod:`._fallback`)."""
        if not all(isinstance(f, Model) for f in self.fallbacks):
            raise ConfigurationError(f"fallbacks must be Models (get_model()), got {fallbacks!r}")
        # (a call's config, its fields then, it merged over ours): reused while unchanged
        self._merged: tuple[GenerateConfig | None, dict[str, Any], GenerateConfig]
        self._merged = (None, {}, self._base_config)
        self._offered = OfferedTools()  # the tools the last call offered
        self.usage = Usage()
        """Tokens used by every call of this model so far."""
        # (event loop, connection limit, its semaphore): the last slot used; the provider's
        # connection key is fixed for the life of its ModelAPI
        self._slot_cache: (
            tuple[weakref.ref[asyncio.AbstractEventLoop], int, AdaptiveSlots] | None
        ) = None
        self.tool_protocol: ToolProtocol = resolve_tool_protocol(
            tool_protocol,
            supports_tools=api.supports_tools,
            provider=api.provider,
            options=api.protocol_options,
        )
        """How tools reach the model (``native``, ``react``, ``json``): ``generate``
        renders the request with it and parses the reply back into tool calls."""

    @property
    def name(self) -> str:
        """``provider/model``."""
        return self.api.name

    def merged_config(self, config: GenerateConfig | None) -> GenerateConfig:
        """A call's ``config`` merged over this model's config and the defaults."""
        return self._base_config if config is None else self._base_config.merge(config)

    def __repr__(self) -> str:
        return f"Model({self.name!r})"

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo | HasToolInfo] = (),
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        """Generate the model's next message.

        Args:
            messages: The conversation so far.
            tools: The tools the model may call (``ToolInfo``\\ s or ``Tool``\\ s).
            config: Settings for this call, overriding the model's.

        Hooks see the conversation and tools as given and the parsed output; while the
        provider is called, ``call`` carries the request the tool protocol rendered. The
        output is bounded (``max_output_chars``, ``max_tool_calls``, the nesting of tool
        arguments; see :mod:`loopwright.model._bounds`) before it is parsed or returned.

        Raises:
            ModelError: The call failed and could not (or could no longer) be retried.
        """
        if config is None:
            cfg = self._base_config
        elif config is self._merged[0] and config.__dict__ == self._merged[1]:
            cfg = self._merged[2]  # an agent passes its (unchanged) config call after call
        else:
            cfg = self._base_config.merge(config)
            self._merged = (config, dict(config.__dict__), cfg)
        # (one list per tool set, shared by the calls offering it: it refuses changes)
        self._offered = shared = offered(tools, self._offered)
        infos: list[ToolInfo] = shared
        call = ModelCall(self, messages, infos, cfg, step=take_step())
        hooks = _hooks.get()
        sink = current_sink()
        if sink is not None:
            call.data["stream"] = sink
        if self.fallbacks:
            call.data[FALLBACK_NEXT] = True
        start = time.perf_counter()
        answered: Model = self
        try:
            for hook in hooks:
                hook.before_generate(call)
            if call.tools is not infos:  # a hook offered other tools (a list of its own)
                infos = list(call.tools)
            try:
                if type(self.tool_protocol) is NativeProtocol:  # (_answer's, one frame less)
                    raw = await self._generate_with_retries(call)
                    output = bound_calls(bound_text(raw, cfg), cfg)
                else:
                    output = await self._answer(call, messages, infos, cfg, sink)
            except Exception as ex:
                if not self.fallbacks:
                    raise
                output, answered = await fall_back(self, call, ex, (messages, infos, config))
        except BaseException as ex:
            call.error = ex
            call.duration = time.perf_counter() - start
            for hook in hooks:
                hook.after_generate(call)
            raise
        call.output = output
        call.duration = time.perf_counter() - start
        call.cost = cost_of(output.model or answered.name, output.usage)
        if output.usage is not None:
            answered.usage = answered.usage + output.usage
        for hook in hooks:
            hook.after_generate(call)
        return output

    async def _answer(
        self,
        call: ModelCall,
        messages: Sequence[ChatMessage],
        infos: list[ToolInfo],
        cfg: GenerateConfig,
        sink: StreamSink | None,
    ) -> ModelOutput:
        """This model's answer to ``call``: rendered with its tool protocol, sent with
        its retries, parsed back and bounded (``cfg`` is the config merged over its own).
        ``generate`` makes a native call itself: a waiting call keeps one frame less."""
        protocol = self.tool_protocol
        if type(protocol) is NativeProtocol:
            return bound_calls(bound_text(await self._generate_with_retries(call), cfg), cfg)
        request = protocol.render(messages, infos, cfg)
        call.messages, call.tools, call.config = (
            request.messages,
            request.tools,
            request.config,
        )
        try:
            raw = await self._generate_with_retries(call)
        finally:
            call.messages, call.tools, call.config = messages, infos, cfg
        raw = bound_text(raw, cfg)
        call.data["tool_protocol"] = protocol.name
        call.data["raw_text"] = raw.message.content
        output = protocol.parse(raw, request)
        if sink is not None:  # the parsed thought (unless streamed) and answer
            parsed = output.message
            if parsed.reasoning and not call.data.get("thought_passed"):
                sink(ReasoningDelta(parsed.reasoning))
            if parsed.content:
                sink(TextDelta(parsed.content))
        return bound_calls(output, cfg)

    async def _generate_with_retries(self, call: ModelCall) -> ModelOutput:
        cfg = call.config
        api = self.api
        max_retries = cfg.max_retries if cfg.max_retries is not None else 5
        limit = cfg.max_connections or api.default_max_connections()
        loop = asyncio.get_running_loop()
        cached = self._slot_cache
        if cached is not None and cached[0]() is loop and cached[1] == limit:
            slot = cached[2]
        else:
            slot = slots_for(api.connection_key(), limit)
            self._slot_cache = (weakref.ref(loop), limit, slot)
        attempt = 0
        while True:
            level: int | None = None
            try:
                if slot.locked():  # all taken: wait in turn, telling the hooks
                    queued = time.perf_counter()
                    await _queue(call, slot, queued)
                    call.wait_time += time.perf_counter() - queued
                else:  # (a free slot is taken at once: no wait, wait_time stays 0.0)
                    await slot.acquire()
                try:
                    began = time.perf_counter()
                    level = slot.level
                    # (outside data, checked before it is touched: ModelError if wrong)
                    output = checked_output(await self._attempt(call))
                finally:
                    slot.release()
                slot.succeeded()
                name = output.model or api.name
                output.time, output.model = time.perf_counter() - began, name
                if output.message.model is None:
                    msg = output.message  # (the same message, named: its id is kept)
                    output.message = msg.model_copy(update={"model": name, "id": msg.id})
                return output
            except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                raise
            except Exception as ex:
                if level is not None and getattr(ex, "status_code", None) == 429:
                    slot.rate_limited(level)  # fewer connections until calls succeed again
                decision = api.classify_error(ex)
                most = max_retries
                if decision.max_retries is not None:
                    most = min(most, decision.max_retries)
                if not decision.retry or attempt >= most:
                    if attempt:
                        ex.add_note(f"loopwright: gave up after {attempt + 1} attempts")
                    raise
                reason = _reason(ex, api.secrets())
                wait = backoff(attempt, cfg, decision.after)
                refused = refused_wait(api.name, ex, reason, cfg, decision.after) or too_late(
                    api.name, ex, reason, wait, call, _hooks.get()
                )
                if refused is not None:  # (no wait: a fallback answers now, or the caller)
                    raise refused from ex
                attempt += 1
                call.retries += 1  # (a fallback's retries add to its model's)
                _log.warning(
                    "%s failed (%s); retry %d of %d in %.1f s",
                    api.name,
                    reason,
                    attempt,
                    most,
                    wait,
                )
                for hook in _hooks.get():
                    on_wait = getattr(hook, "on_wait", None)
                    if on_wait is not None:
                        on_wait(call, wait)
                told: list[Any] = []
                slept_from = time.perf_counter()
                try:
                    _wait_began(call, told)
                    await asyncio.sleep(wait)
                finally:  # what was really waited (a cancelled sleep is cut short)
                    slept = time.perf_counter() - slept_from
                    call.wait_time += slept
                    _wait_ended(call, told, slept)

    async def _attempt(self, call: ModelCall) -> ModelOutput:
        """One provider call under the config's deadline, enforced around the whole call
        (not per read: a server sending a byte at a time cannot stretch it)."""
        timeout = call.config.timeout
        sink: StreamSink | None = call.data.get("stream")
        if timeout is None or math.isinf(timeout):
            if sink is not None:
                return await self._stream(call, sink)
            return await self.api.generate(call.messages, call.tools, call.config)
        try:
            async with deadline(timeout):  # (a timer that keeps no run alive)
                if sink is not None:
                    return await self._stream(call, sink)
                return await self.api.generate(call.messages, call.tools, call.config)
        except TimeoutError as ex:
            if isinstance(ex, ModelError):
                raise
            if call.data.get(DELIVERED):  # (text reached the consumer: not retried)
                raise cut_at_deadline(self.name, timeout) from ex
            raise ModelTimeoutError(
                f"{self.name} did not answer within {timeout:g}s; raise "
                "GenerateConfig.timeout or check the provider"
            ) from ex

    async def _stream(self, call: ModelCall, sink: StreamSink) -> ModelOutput:
        """One streamed provider call (:func:`~loopwright.model._streaming.stream_attempt`)."""
        protocol = self.tool_protocol
        thoughts = None if type(protocol) is NativeProtocol else ThoughtFilter(protocol.name)
        output = await stream_attempt(
            self.api,
            (call.messages, call.tools, call.config),
            sink,
            thoughts,
            lambda ex: _reason(ex, self.api.secrets()),
            call.data,
        )
        call.data["thought_passed"] = thoughts is not None and thoughts.passed
        return output

    async def aclose(self) -> None:
        """Release the provider's clients and connections."""
        await self.api.aclose()

    async def __aenter__(self) -> Model:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
