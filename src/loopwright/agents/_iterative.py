"""``iterative()``: a budgeted agent for long, open-ended work in small steps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from .._errors import ConfigurationError
from .._waits import WaitClock
from ..history import HistoryFunction, HistoryPolicy
from ..limits import (
    DEFAULT_MAX_STEPS,
    DEFAULT_STEPS_NOTE,
    LimitInfo,
    LimitType,
    check_limits,
    limit_message,
    remaining_time,
    step_limit_in_force,
)
from ..model import (
    ChatMessage,
    GenerateConfig,
    Model,
    ModelCall,
    UserMessage,
    get_model,
    model_hook,
)
from ._checks import (
    check_callable,
    check_config,
    check_count,
    check_flag,
    check_history,
    check_model,
    check_text,
    check_tool_list,
)
from ._lifecycle import HookRun, Hooks, check_hooks
from ._state import AgentState, AnyTool, close_open_calls
from ._steps import (
    NOT_RUN,
    MaxSteps,
    check_max_steps,
    check_tools,
    has_stop_keyword,
    install_prompt,
    max_tool_output,
    offered_tools,
    recover_overflow,
    run_tool_calls,
)
from ._steps import stop_keywords as stop_keywords_of

__all__ = ["DEFAULT_NUDGE", "IterativeAgent", "iterative"]

logger = logging.getLogger("loopwright.agents")

DEFAULT_NUDGE = (
    "Continue with the next small step toward the goal. Use a tool; keep each step short. "
    "Time remaining: {remaining}."
)

TimeoutFactory = Callable[[float | None], contextlib.AbstractAsyncContextManager[Any]]


def _fmt_remaining(seconds: float | None) -> str:
    if seconds is None:
        return "unlimited"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


MAX_OVERFLOW_RECOVERIES = 3
"""Consecutive context overflows recovered from (by shrinking the history) before the
agent gives up with ``completed == "model_length"``."""


class _Run:
    """What one run of the agent keeps from step to step."""

    __slots__ = ("by_name", "hooks", "max_output", "overflows", "tools")

    def __init__(self, tools: list[AnyTool], max_output: int | None, hooks: HookRun | None) -> None:
        self.tools = tools
        self.hooks = hooks
        self.by_name = {t.name: t for t in tools}
        self.max_output = max_output
        self.overflows = 0


class _WaitMeter:
    """The time model calls spent waiting (retry backoff, connection queue), overlapping
    waits once; with ``productive_time``, it also holds the timeouts of the step's parts
    still while calls wait, so that waiting never uses up a part's budget."""

    def __init__(self, hold_timeouts: bool) -> None:
        self.waits = WaitClock()
        self.hold_timeouts = hold_timeouts
        # the timeouts in force (innermost last) and, while held, their time left
        self.scopes: list[Any] = []
        self._held: list[tuple[Any, float]] = []

    def before_generate(self, call: ModelCall) -> None:
        pass

    def after_generate(self, call: ModelCall) -> None:
        pass

    def wait_began(self, call: ModelCall) -> None:
        if self.waits.begin() and self.hold_timeouts:
            now = asyncio.get_running_loop().time()
            for scope in self.scopes:
                expired = getattr(scope, "expired", None)
                when = scope.when()
                if when is None or (expired is not None and expired()):
                    continue  # no deadline, or it has passed: its cancellation is on its way
                scope.reschedule(None)
                self._held.append((scope, when - now))

    def wait_ended(self, call: ModelCall, seconds: float) -> None:
        if self.waits.end() and self._held:
            now = asyncio.get_running_loop().time()
            for scope, left in self._held:
                scope.reschedule(now + left)
            self._held.clear()

    @contextlib.asynccontextmanager
    async def timeout(self, factory: TimeoutFactory, seconds: float | None) -> AsyncIterator[None]:
        """``factory(seconds)``, held while calls wait when it is an ``asyncio.Timeout``
        (or anything with ``when()`` and ``reschedule()``)."""
        async with factory(seconds) as scope:
            holdable = callable(getattr(scope, "when", None)) and callable(
                getattr(scope, "reschedule", None)
            )
            if holdable:
                self.scopes.append(scope)
            try:
                yield
            finally:
                if holdable:
                    self.scopes.remove(scope)
                    self._held = [(s, left) for s, left in self._held if s is not scope]


def _check_time_limit(seconds: object) -> None:
    if seconds is None:
        return
    number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    if not number or not 0 < seconds < float("inf"):  # type: ignore[operator]
        raise ConfigurationError(
            f"iterative: time_limit must be a number of seconds > 0, or None, got {seconds!r}"
        )


def _report_progress(step: int, elapsed: float, state: AgentState) -> None:
    from ..transcripts import current_transcript

    message = (
        f"iterative agent: step {step}, {elapsed:.1f}s elapsed, {len(state.messages)} messages"
    )
    t = current_transcript()
    if t is not None:
        t.info(message)
    else:  # not inside a run: log it instead
        logger.info(message)


class IterativeAgent:
    """Built by :func:`iterative`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        prompt: str | None,
        tools: Sequence[AnyTool],
        model: str | Model | None,
        time_limit: float | None,
        productive_time: bool,
        max_steps: MaxSteps,
        nudge: str,
        progress_every: int | None,
        stop_keywords: str | Sequence[str] | None,
        history: HistoryPolicy | HistoryFunction | None,
        config: GenerateConfig | None,
        clock: Callable[[], float],
        timeout_factory: TimeoutFactory,
        hooks: Sequence[Hooks] = (),
    ) -> None:
        who = "iterative"
        self.hooks = check_hooks(hooks, who)
        check_text(name, "name", who)
        check_text(description, "description", who)
        check_text(prompt, "prompt", who, optional=True)
        check_text(nudge, "nudge", who)
        check_model(model, who)
        check_config(config, who)
        _check_time_limit(time_limit)
        check_flag(productive_time, "productive_time", who)
        if progress_every is not None:
            check_count(progress_every, "progress_every", who, least=1)
        check_callable(clock, "clock", who, "a function returning seconds")
        check_callable(timeout_factory, "timeout_factory", who, "a function (see the docs)")
        self.name, self.description, self.prompt = name, description, prompt
        self.tools, self.model, self.config = check_tool_list(tools, who), model, config
        self.time_limit, self.productive_time = time_limit, productive_time
        self.max_steps = check_max_steps(max_steps, who)
        self.nudge, self.progress_every = nudge, progress_every
        self.stop_keywords = stop_keywords_of(stop_keywords, who)
        self.history = check_history(history, who)
        self.clock, self.timeout_factory = clock, timeout_factory
        check_tools(self.tools, who)
        try:
            nudge.format(remaining="1 min 0 s")
        except (KeyError, IndexError, ValueError) as ex:
            raise ConfigurationError(
                f"iterative: the nudge may use {{remaining}} only (and {{{{ }}}} for braces); "
                f"{type(ex).__name__}: {ex}"
            ) from None

    async def __call__(self, state: AgentState) -> AgentState:
        hooks = HookRun.start(self.hooks)
        if hooks is None:
            return await self._run(state, None)
        async with hooks.agent_scope(state):
            await self._run(state, hooks)
        return state

    async def _run(self, state: AgentState, hooks: HookRun | None) -> AgentState:
        model = get_model(self.model)
        tools = offered_tools(self.tools, state)
        install_prompt(state.messages, self.prompt)
        run = _Run(tools, max_tool_output(model, self.config), hooks)
        meter = _WaitMeter(hold_timeouts=self.productive_time)
        max_steps, note = self._step_bound()
        start = self.clock()

        def elapsed() -> float:
            return self.clock() - start - (meter.waits.total() if self.productive_time else 0.0)

        def remaining() -> float | None:
            return self._remaining(elapsed())

        def timeout(seconds: float | None) -> contextlib.AbstractAsyncContextManager[Any]:
            return meter.timeout(self.timeout_factory, seconds)

        try:
            with model_hook(meter):
                step = 0
                while True:
                    step += 1
                    if hooks is not None:
                        await hooks.end_step(state)
                    used = elapsed()
                    if self.time_limit is not None and used >= self.time_limit:
                        kind: LimitType = "working" if self.productive_time else "time"
                        state.limit = LimitInfo(
                            type=kind,
                            limit=self.time_limit,
                            value=used,
                            message=limit_message(kind, self.time_limit, used),
                        )
                        state.completed = "limit"
                        return state
                    if max_steps is not None and step > max_steps:
                        message = limit_message("step", max_steps, max_steps)
                        state.limit = LimitInfo(
                            type="step",
                            limit=max_steps,
                            value=max_steps,
                            message=f"{message} ({note})" if note else message,
                        )
                        state.completed = "limit"
                        return state
                    if self.progress_every and step % self.progress_every == 0:
                        _report_progress(step, used, state)
                    check_limits()
                    if hooks is not None:
                        await hooks.begin_step(state)
                    if await self._step(state, model, run, remaining, timeout):
                        return state
        finally:
            close_open_calls(state, NOT_RUN)

    def _step_bound(self) -> tuple[int | None, str | None]:
        """The most steps of this run, and what to say of them when they are done: the
        default bound applies without a time budget and without a step limit in force."""
        if self.max_steps != "default":
            return self.max_steps, None
        if self.time_limit is not None or step_limit_in_force():
            return None, None
        return DEFAULT_MAX_STEPS, DEFAULT_STEPS_NOTE

    def _remaining(self, elapsed: float) -> float | None:
        own = None if self.time_limit is None else max(self.time_limit - elapsed, 0.001)
        outer = remaining_time()
        candidates = [x for x in (own, outer) if x is not None]
        return min(candidates) if candidates else None

    async def _step(
        self,
        state: AgentState,
        model: Model,
        run: _Run,
        remaining: Callable[[], float | None],
        timeout: TimeoutFactory,
    ) -> bool:
        """One step: True when the agent is done. Every part of it (history policy, model
        call, tools) gets the budget left when it starts; when that runs out, the step
        ends and the budget check before the next step ends the run."""
        if self.history is not None:
            usage = state.output.usage if state.output is not None else None
            try:
                async with timeout(remaining()):
                    state.messages = await self.history.apply(state.messages, usage)
            except TimeoutError:
                return False
        budget = remaining()
        nudge = UserMessage(content=self.nudge.format(remaining=_fmt_remaining(budget)))
        messages: list[ChatMessage] = state.messages
        messages.append(nudge)  # ephemeral: sent with this request, never kept
        try:
            async with timeout(budget):
                if run.hooks is None:
                    output = await model.generate(messages, run.tools, self.config)
                else:
                    request = await run.hooks.request(messages, run.tools, self.config)
                    output = await model.generate(request.messages, request.tools, request.config)
                    await run.hooks.after_model(output)
        except TimeoutError:
            return False
        finally:
            if messages and messages[-1] is nudge:
                messages.pop()
        if output.stop_reason == "model_length" and not output.tool_calls:
            run.overflows += 1
            if run.overflows > MAX_OVERFLOW_RECOVERIES:
                state.output, state.completed = output, "model_length"
                return True
            try:
                async with timeout(remaining()):
                    await recover_overflow(state, self.history)
            except TimeoutError:
                pass
            return False
        run.overflows = 0
        state.output = output
        state.messages.append(output.message)
        stop = has_stop_keyword(self.stop_keywords, output.text)
        if output.tool_calls:
            try:
                async with timeout(remaining()):
                    if await run_tool_calls(
                        state,
                        output,
                        output.message,
                        run.tools,
                        run.by_name,
                        run.max_output,
                        run.hooks,
                    ):
                        return True
            except TimeoutError:
                close_open_calls(state, "Not run to the end: the time budget ran out.")
                return False
        if output.message.format_error is not None:  # a reply a text protocol could not read
            state.messages.append(UserMessage(content=output.message.format_error))
        if stop:  # once the tools asked for ran (a submit among them is the answer)
            state.completed = "stop_keyword"
            return True
        return False


def iterative(
    *,
    name: str = "iterative",
    description: str = "An agent for long, open-ended work in small budgeted steps.",
    prompt: str | None = None,
    tools: Sequence[AnyTool] = (),
    model: str | Model | None = None,
    time_limit: float | None = None,
    productive_time: bool = False,
    max_steps: MaxSteps = "default",
    nudge: str = DEFAULT_NUDGE,
    progress_every: int | None = 10,
    stop_keywords: str | Sequence[str] | None = None,
    history: HistoryPolicy | HistoryFunction | None = None,
    config: GenerateConfig | None = None,
    clock: Callable[[], float] = time.monotonic,
    timeout_factory: TimeoutFactory = asyncio.timeout,
    hooks: Sequence[Hooks] = (),
) -> IterativeAgent:
    """An agent for long open-ended work: small steps within a real-time budget.

    Each step sends the conversation plus an ephemeral nudge (with the time remaining)
    that is never kept in the history, runs the tools asked for, and repeats until the
    budget or ``max_steps`` runs out (``state.limit`` says which), a stop keyword
    appears, or a terminal tool (e.g. ``submit``, if given in ``tools``) is called.
    Model calls and tool execution each get a timeout equal to the remaining budget.

    Args:
        time_limit: The real-time budget in seconds.
        productive_time: Count only productive time: time model calls spent waiting for
            retries or a connection slot is not charged to the budget (calls waiting at
            the same time are charged nothing for their common wait, once), and the
            timeouts of the model call and the tools stand still while a call waits.
        max_steps: At most this many steps. ``"default"``: with no ``time_limit`` and
            no step limit in force, :data:`~loopwright.DEFAULT_MAX_STEPS` (25), so the
            agent is never unbounded by accident; with either, no bound of its own.
            ``None``: no step bound of its own.
        nudge: The ephemeral message; ``{remaining}`` is replaced by the time left.
        progress_every: Record a progress info line every N steps (``None``: never).
        history: History policy applied each step (and on context overflow): a policy or
            a function ``messages -> messages`` (sync or async).
        clock: Seconds, monotonic (inject a fake clock in tests).
        timeout_factory: ``factory(seconds | None)`` -> async context manager that
            raises ``TimeoutError`` after that long (default ``asyncio.timeout``).
        hooks: :class:`~loopwright.Hooks` of this agent (see ``react``); a step is one
            model call (its nudge included) and the tool calls it asks for.
    """
    return IterativeAgent(
        name=name,
        description=description,
        prompt=prompt,
        tools=tools,
        model=model,
        time_limit=time_limit,
        productive_time=productive_time,
        max_steps=max_steps,
        nudge=nudge,
        progress_every=progress_every,
        stop_keywords=stop_keywords,
        history=history,
        config=config,
        clock=clock,
        timeout_factory=timeout_factory,
        hooks=hooks,
    )
