"""``Hooks``: the public lifecycle hooks of runs and agents, and how the loops call them.

A hook is a subclass of :class:`Hooks` that overrides the methods it needs; every
method is an async no-op by default. Hooks are registered per run (``run(...,
hooks=[...])``: they hear every agent of the run, agents used as tools included) or per
agent (``react(..., hooks=[...])`` / ``iterative(..., hooks=[...])``).

Who hears what:

- steps, model calls and tool calls are heard by every hook in force: the run's (an
  outer run's first) and then the agent's own, in the order given;
- ``on_run_start``, ``on_run_end``, ``on_limit`` and ``on_error`` are about how the
  thing a hook is registered on starts and ends: a run's hooks hear them for the run
  (once), an agent's hooks for each run of that agent.

A hook may observe (read what it is given), change (``before_model`` returns another
request, ``after_tool`` another result) or veto (``before_tool`` returns a message
instead of running the call). To end the whole run cleanly, a hook raises
:class:`StopRun`: ``run()`` returns the state so far with ``state.completed ==
"stopped"`` and the reason in ``state.error``. Any other exception a hook raises is a
bug: it propagates like an agent's error.

Design: the loops hold the hooks of one agent run in a :class:`HookRun`, built once
when the agent starts (``None`` when no hook is in force, so that a step without hooks
pays one ``if``). Tool hooks run inside ``execute_tools`` (its ``gate``), in each call's
own context and before the transcript records the result, so that a redacted result is
the only one the run store sees.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from ..limits import LimitExceededError, LimitInfo
from ..model import ChatMessage, GenerateConfig, ModelOutput, ToolCall, ToolMessage
from ._state import AgentState

__all__ = [
    "HookRun",
    "Hooks",
    "ModelRequest",
    "StopRun",
    "check_hooks",
    "run_hooks",
    "stop_run",
]


class StopRun(Exception):
    """Raised by a hook to end the run cleanly: ``run()`` returns the state so far with
    ``state.completed == "stopped"`` and ``str(reason)`` in ``state.error``.

    Raised from a tool hook, it ends the run like a tool's error would (the other calls
    of the same reply are cancelled; the call's event records it as its failure), but
    the run is not recorded as failed. The transcript records the reason as an info
    event (source ``"hooks"``).
    """

    def __init__(self, reason: str = "stopped by a hook") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class ModelRequest:
    """One model call as ``before_model`` sees it, and may change it.

    ``messages`` is the conversation itself (``state.messages``, not a copy: copying it
    would cost every step the whole history): changing it in place changes the
    conversation for good. To change only what this call sends, return a new request,
    e.g. ``dataclasses.replace(request, messages=[*request.messages, note])``.
    """

    messages: list[ChatMessage]
    """What the model is sent (an ``iterative`` agent's ephemeral nudge included)."""
    tools: list[Any]
    """The tools offered (:class:`~loopwright.Tool` s, a handoff's tool included): the
    agent's own list, which it offers at every call; return a request with a new list to
    change it for one call."""
    config: GenerateConfig | None
    """The agent's generation settings for the call (``None``: the model's)."""


class Hooks:
    """Subclass and override the methods you need; each default does nothing.

    Every method is a coroutine. One instance may serve many runs at once (keep state
    that belongs to one run keyed by it, or make one instance per run).
    """

    async def on_run_start(self, state: AgentState) -> None:
        """The run (a run hook) or the agent (an agent's hook) starts with ``state``."""

    async def on_run_end(self, state: AgentState) -> None:
        """The run or the agent ended with ``state``: completed, at a limit (after
        ``on_limit``, also when the limit is then raised: ``raise_on_limit``, or a limit
        of an outer run ending an agent) or stopped (:class:`StopRun`). Not called when
        it ends with an error (``on_error`` is) or is cancelled."""

    async def on_step_start(self, state: AgentState) -> None:
        """A step (one model call and the tool calls it asks for) starts; the limits
        were checked."""

    async def on_step_end(self, state: AgentState) -> None:
        """The step ended: its results are in ``state.messages`` (called before the next
        step's limit check, and when the agent returns)."""

    async def before_model(self, request: ModelRequest) -> ModelRequest | None:
        """Before a model call. Return ``None`` to send ``request`` as it is, or another
        request to send instead (see :class:`ModelRequest`)."""
        return None

    async def after_model(self, output: ModelOutput) -> None:
        """After a model call returned ``output`` (``output.usage`` counts its tokens),
        before the agent acts on it: a :class:`StopRun` raised here ends the run before
        the reply joins the conversation (the transcript has recorded it)."""

    async def before_tool(self, call: ToolCall) -> str | None:
        """Before a tool call runs (before its arguments are checked and before the
        approval policy). Return ``None`` to let it run, or a message to deny it: the
        tool does not run and the model receives the message as the call's error (of
        type ``"approval"``)."""
        return None

    async def after_tool(self, call: ToolCall, result: ToolMessage) -> ToolMessage | None:
        """After a tool call returned ``result`` (an error the model reads included).
        Return ``None`` to keep it, or another :class:`~loopwright.ToolMessage` for the
        same call (e.g. ``result.model_copy(update={"content": redacted})``): only the
        returned one reaches the conversation, the transcript and the run store."""
        return None

    async def on_limit(self, info: LimitInfo) -> None:
        """A limit ended the run (a run hook) or the agent (an agent's hook)."""

    async def on_error(self, error: Exception) -> None:
        """An error ends the run or the agent; it propagates after the hooks heard it."""


HOOK_METHODS = frozenset(
    name for name in vars(Hooks) if name.startswith(("on_", "before_", "after_"))
)
"""The names of the hook methods."""


def check_hooks(hooks: object, who: str) -> tuple[Hooks, ...]:
    """A list of :class:`Hooks` instances, as a tuple; anything else is refused, and so
    is a hook whose methods would fail in the middle of a run: one that is not ``async
    def``, or a method named like a hook (``on_...``, ``before_...``, ``after_...``)
    that is not one (a misspelt hook would never be called)."""
    if isinstance(hooks, Hooks | type):
        raise ConfigurationError(f"{who}: hooks must be a list: hooks=[{_show(hooks)}]")
    if isinstance(hooks, str | bytes) or not isinstance(hooks, Sequence):
        raise ConfigurationError(
            f"{who}: hooks must be a list of lw.Hooks instances, got {_show(hooks)}"
        )
    for hook in hooks:
        if not isinstance(hook, Hooks):
            what = "a class: pass an instance" if isinstance(hook, type) else "not one"
            raise ConfigurationError(
                f"{who}: every hook must be an instance of a subclass of lw.Hooks "
                f"(class MyHooks(lw.Hooks): ...; hooks=[MyHooks()]); {_show(hook)} is {what}"
            )
        _check_methods(type(hook), who)
    return tuple(hooks)


def _check_methods(cls: type[Hooks], who: str) -> None:
    for klass in cls.__mro__:
        if klass is Hooks or klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith(("on_", "before_", "after_")):
                continue
            where = f"{who}: {cls.__name__}.{name}"
            if name not in HOOK_METHODS:
                raise ConfigurationError(
                    f"{where} is not a hook method, so it would never be called; the hook "
                    f"methods are {', '.join(sorted(HOOK_METHODS))} (name a helper "
                    "otherwise, e.g. with a leading _)"
                )
            if not inspect.iscoroutinefunction(value):
                raise ConfigurationError(f"{where} must be a coroutine: async def {name}(...)")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


_in_force: ContextVar[tuple[Hooks, ...]] = ContextVar("loopwright_run_hooks", default=())


@contextlib.contextmanager
def run_hooks(hooks: tuple[Hooks, ...]) -> Iterator[None]:
    """Put a run's hooks in force (after an outer run's) for what runs inside."""
    token = _in_force.set(_in_force.get() + hooks)
    try:
        yield
    finally:
        _in_force.reset(token)


def stop_run(state: AgentState, stop: StopRun, *, record: bool = False) -> None:
    """Record on ``state`` that a hook stopped the run (and, with ``record``, in the
    current transcript)."""
    state.completed, state.error = "stopped", stop.reason
    if record:
        from ..transcripts import current_transcript

        transcript = current_transcript()
        if transcript is not None:
            transcript.info(f"The run was stopped by a hook: {stop.reason}", source="hooks")


class HookRun:
    """The hooks of one run of an agent: all in force (the runs', then the agent's) for
    steps, model and tool calls, the agent's own for its start and end."""

    __slots__ = ("all", "own", "step_open")

    def __init__(self, own: tuple[Hooks, ...], all: tuple[Hooks, ...]) -> None:
        self.own, self.all = own, all
        self.step_open = False

    @classmethod
    def start(cls, own: tuple[Hooks, ...]) -> HookRun | None:
        """The hooks for an agent whose own are ``own``; ``None`` when none is in force."""
        runs = _in_force.get()
        if not runs and not own:
            return None
        return cls(own, runs + own)

    @classmethod
    def start_loop(cls, loop: tuple[Hooks, ...], own: tuple[Hooks, ...]) -> HookRun | None:
        """Like :meth:`start`, with the loop's own hooks (its history policy, nudge,
        progress line: see ``_loop_hooks``) first, so that every other hook sees their
        work; they hear no start or end of the agent. ``None`` when no hook is in force."""
        runs = _in_force.get()
        if not loop and not runs and not own:
            return None
        return cls(own, loop + runs + own)

    async def begin_step(self, state: AgentState) -> None:
        """Start a step (the loop ends the one before with ``end_step`` first)."""
        self.step_open = True
        for hook in self.all:
            await hook.on_step_start(state)

    async def end_step(self, state: AgentState) -> None:
        """End the open step, if there is one."""
        if self.step_open:
            self.step_open = False
            for hook in self.all:
                await hook.on_step_end(state)

    async def request(
        self, messages: list[ChatMessage], tools: list[Any], config: GenerateConfig | None
    ) -> ModelRequest:
        """The request to send, after every ``before_model``."""
        request = ModelRequest(messages, tools, config)
        for hook in self.all:
            changed = await hook.before_model(request)
            if changed is not None:
                if not isinstance(changed, ModelRequest):
                    raise TypeError(
                        f"{type(hook).__name__}.before_model returned {_show(changed)}; "
                        "return None or a ModelRequest"
                    )
                request = changed
        return request

    async def after_model(self, output: ModelOutput) -> None:
        for hook in self.all:
            await hook.after_model(output)

    async def before(self, call: ToolCall) -> str | None:
        """``execute_tools``' gate: the first denial, or ``None``."""
        for hook in self.all:
            denial = await hook.before_tool(call)
            if denial is not None:
                if not isinstance(denial, str):
                    raise TypeError(
                        f"{type(hook).__name__}.before_tool returned {_show(denial)}; "
                        "return None to let the call run or a message (str) to deny it"
                    )
                return denial
        return None

    async def after(self, call: ToolCall, result: ToolMessage) -> ToolMessage:
        """``execute_tools``' gate: the result after every ``after_tool``."""
        for hook in self.all:
            changed = await hook.after_tool(call, result)
            if changed is not None:
                if not isinstance(changed, ToolMessage) or changed.tool_call_id != call.id:
                    raise TypeError(
                        f"{type(hook).__name__}.after_tool returned {_show(changed)}; "
                        f"return None or a ToolMessage answering call {call.id!r}"
                    )
                result = changed
        return result

    async def run_start(self, state: AgentState) -> None:
        for hook in self.own:
            await hook.on_run_start(state)

    @contextlib.asynccontextmanager
    async def agent_scope(self, state: AgentState) -> AsyncIterator[None]:
        """Around one run of the agent: its own hooks hear it start and end."""
        await self.run_start(state)
        try:
            yield
        except LimitExceededError as ex:
            await self.end_step(state)
            await finish(self.own, state, ex.info)
            raise
        except StopRun as ex:
            stop_run(state, ex)
            await self.end_step(state)
            await finish(self.own, state, None)
            raise
        except Exception as ex:
            await tell_error(self.own, ex)
            raise
        await self.end_step(state)
        await finish(self.own, state, state.limit if state.completed == "limit" else None)


async def finish(hooks: Sequence[Hooks], state: AgentState, limit: LimitInfo | None) -> None:
    """``on_limit`` (when ``limit`` ended it) then ``on_run_end``, for each hook."""
    if limit is not None:
        for hook in hooks:
            await hook.on_limit(limit)
    for hook in hooks:
        await hook.on_run_end(state)


async def tell_error(hooks: Sequence[Hooks], error: Exception) -> None:
    """``on_error`` for each hook; a hook that fails too is noted on ``error``."""
    for hook in hooks:
        try:
            await hook.on_error(error)
        except Exception as failure:
            error.add_note(f"(the on_error hook of {type(hook).__name__} failed too: {failure!r})")
