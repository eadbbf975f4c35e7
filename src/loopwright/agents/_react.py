"""The standard agent loop — generate, run the tools asked for, repeat — and its options.

:class:`ReactAgent` (``lw.react``) is the one loop; an agent is its options, written
once as the fields of the dataclass and checked when it is made. ``lw.iterative`` is a
preset of it (:class:`~loopwright.IterativeAgent`: other defaults, same loop). What the
options add to a step (a history policy, a nudge, progress lines) comes in as the loop's
own hooks (``_loop_hooks``); its time budget and step bound are ordinary limits
(``limits.py``) that it enters for each run and whose end it records as its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from .._contexts import NOTHING, all_of
from .._errors import ConfigurationError
from ..history import HistoryFunction, HistoryPolicy
from ..limits import LimitExceededError, check_limits
from ..model import (
    GenerateConfig,
    Model,
    ModelOutput,
    ToolMessage,
    UserMessage,
    get_model,
)
from ..model._step import agent_step
from ..model.protocols import is_format_error
from ..tools import Tool
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
from ._handoff import Handoff, run_handoff
from ._lifecycle import HookRun, Hooks, check_hooks
from ._loop_hooks import ApplyHistory, Nudge, Progress
from ._specs import write_missing_specs
from ._state import AgentState, AnyTool, close_open_calls
from ._steps import (
    NOT_RUN,
    MaxSteps,
    Recovery,
    check_max_steps,
    check_time_limit,
    check_tools,
    has_stop_keyword,
    install_prompt,
    max_tool_output,
    offered_tools,
    own_limits,
    recover_overflow,
    run_tool_calls,
)
from ._steps import stop_keywords as stop_keywords_of
from ._typed import DEFAULT_OUTPUT_RETRIES, TypedOutput, typed_output

__all__ = ["DEFAULT_CONTINUE", "ContinueHandler", "ReactAgent", "react"]

DEFAULT_CONTINUE = (
    "Please continue with the task. When you have the final answer, call the {submit} tool with it."
)
MAX_TOKENS_CONTINUE = (
    "Your reply was cut off by the output token limit. Continue exactly where you stopped."
)
CONTENT_FILTER_RETRY = (
    "Your last reply was blocked by the provider's content filter. Rephrase it, or take a "
    "different approach."
)

ContinueResult: TypeAlias = bool | str | None
ContinueHandler: TypeAlias = (
    str | Callable[[AgentState], ContinueResult | Awaitable[ContinueResult]]
)
"""What to do when a model answers without calling a tool (with ``submit`` on):

- a string: send it as the nudge to continue;
- a callable ``(state) -> result`` (sync or async): ``True``/``None`` sends the default
  nudge, a string sends that string, ``False`` stops the agent (``continue_stopped``).
"""

ToolLike: TypeAlias = "AnyTool | Handoff"


def _default_submit() -> AnyTool:
    from ..tools.builtin import submit

    return submit()


@dataclass(kw_only=True, eq=False, repr=False)
class ReactAgent:
    """The standard agent: generate, run the tool calls with ``execute_tools``, repeat.

    ``lw.react(...)`` makes one (``react`` is this class). It ends when the model calls
    ``submit`` successfully (its answer becomes ``state.output``), when it answers
    without a tool call and ``submit=False`` (and no ``nudge``), when ``on_continue``
    says stop, when a stop keyword appears in its text, or when a limit is reached
    (``state.limit``). ``state.completed`` says which. A setting of the wrong kind is
    refused when the agent is made, with a :class:`~loopwright.ConfigurationError`
    naming what was expected. Call the agent with an :class:`AgentState`.

    It is never unbounded by accident: unless ``max_steps`` or ``time_limit`` is given
    or a step limit is in force when it starts (``run(limits=[lw.step_limit(n)])``, an
    outer agent's), it stops after :data:`~loopwright.DEFAULT_MAX_STEPS` (25) model
    calls, with ``state.limit`` saying so. An agent used as a tool or handed the
    conversation runs within its caller's step limit, which then counts its steps too.
    """

    name: str = "react"
    """The agent's name (used by ``as_tool`` and transcripts)."""
    description: str = "A general agent that reasons and calls tools to complete a task."
    """What the agent does (used by ``as_tool``)."""
    prompt: str | None = None
    """A system prompt, placed first in the conversation."""
    tools: Sequence[ToolLike] = ()
    """The tools it may call; :func:`handoff` entries pass the conversation on (kept as
    a list of what was given)."""
    model: str | Model | None = None
    """The model (default: the run's model)."""
    submit: bool | AnyTool = True
    """``True`` adds the built-in ``submit`` tool; a :class:`Tool` (terminal) uses that
    one; ``False`` ends the agent at the first answer without tools (unless it has a
    ``nudge``)."""
    on_continue: ContinueHandler | None = None
    """What to do when the model answers without a tool call while ``submit`` is on
    (see :data:`ContinueHandler`); default: a message asking it to go on."""
    max_steps: MaxSteps = "default"
    """At most this many model calls (a step limit for this agent, ending the agent
    with ``state.limit``). ``"default"``: :data:`~loopwright.DEFAULT_MAX_STEPS` unless
    a step limit is already in force or the agent has a ``time_limit``; ``None``: no
    bound of its own (the limits in force still apply)."""
    time_limit: float | None = None
    """A time budget in seconds for each run of the agent: a :func:`~loopwright.time_limit`
    it enters (a :func:`~loopwright.working_limit` with ``productive_time``), which
    cancels a model call, tool or history policy still at work when it runs out and ends
    the agent with ``state.limit``."""
    productive_time: bool = False
    """Count only productive time against ``time_limit``: time model calls spend
    waiting for retries or a connection slot is not charged (calls waiting at once are
    charged nothing for their common wait, once), and nothing is cut off while waiting."""
    stop_keywords: str | Sequence[str] | None = None
    """End when any of these appears in the model's text (any case), once the tools
    that reply asked for ran."""
    history: HistoryPolicy | HistoryFunction | None = None
    """How to keep the history bounded (see :mod:`loopwright.history`): a policy or a
    function ``messages -> messages`` (sync or async), applied at each step's start;
    also used for overflow recovery (default: truncate then prune)."""
    config: GenerateConfig | None = None
    """Generation settings for every call."""
    recovery: Recovery = field(default_factory=Recovery)
    """How many bad replies in a row it recovers from (see :class:`~loopwright.Recovery`)."""
    nudge: str | None = None
    """An ephemeral message sent after the conversation with every model call and never
    kept in it; ``{remaining}`` is replaced by the time left ("12 min 5 s", or
    "unlimited" without a time limit in force). With a nudge, an answer without a tool
    call does not end the agent: the next step's nudge asks it to go on."""
    progress_every: int | None = None
    """Record a progress line ("NAME agent: step N, ...") every N steps (``None``:
    never), in the run's transcript (outside a run, in the ``loopwright.agents`` log)."""
    hooks: Sequence[Hooks] = ()
    """:class:`~loopwright.Hooks` of this agent: they hear each run of it (its start,
    end, limit, error) and its steps (a step is one model call, its nudge included, and
    the tool calls it asks for), model calls and tool calls, after the run's hooks
    (``run(..., hooks=)``)."""
    output: Any = None
    """A type for the final answer (a pydantic model, dataclass, TypedDict or JSON type):
    the submit tool takes an ``answer`` of that type, and ``state.result`` holds the
    validated value (see :mod:`loopwright.agents._typed`). Needs ``submit=True``."""
    max_output_retries: int = DEFAULT_OUTPUT_RETRIES
    """Answers failing validation the model may correct before the run stops."""

    offered: list[AnyTool] = field(init=False, default_factory=list)
    """The tools it offers the model (besides the run's): ``tools`` without the
    handoffs, and the ``submit`` tool."""
    handoffs: dict[str, Handoff] = field(init=False, default_factory=dict)
    """The handoffs among ``tools``, by their tool's name."""
    submit_tool: AnyTool | None = field(init=False, default=None)
    """The terminal tool ``submit`` added, if any."""

    _who: ClassVar[str] = "react"

    def __post_init__(self) -> None:
        who = self._who
        self._hooks = check_hooks(self.hooks, who)
        self._output: TypedOutput | None = typed_output(
            self.output, self.submit, self.max_output_retries, who
        )
        check_text(self.name, "name", who)
        check_text(self.description, "description", who)
        check_text(self.prompt, "prompt", who, optional=True)
        check_model(self.model, who)
        check_config(self.config, who)
        if self.on_continue is not None and not isinstance(self.on_continue, str):
            check_callable(self.on_continue, "on_continue", who, "a string, a function or None")
        self.max_steps = check_max_steps(self.max_steps, who)
        check_time_limit(self.time_limit, who)
        check_flag(self.productive_time, "productive_time", who)
        if not isinstance(self.recovery, Recovery):
            raise ConfigurationError(
                f"{who}: recovery must be a lw.Recovery (lw.Recovery(format_errors=5)), "
                f"got {self.recovery!r}"
            )
        check_text(self.nudge, "nudge", who, optional=True)
        if self.nudge is not None:
            try:
                self.nudge.format(remaining="1 min 0 s")
            except (KeyError, IndexError, ValueError) as ex:
                raise ConfigurationError(
                    f"{who}: the nudge may use {{remaining}} only (and {{{{ }}}} for "
                    f"braces); {type(ex).__name__}: {ex}"
                ) from None
        if self.progress_every is not None:
            check_count(self.progress_every, "progress_every", who, least=1)
        self._keywords = stop_keywords_of(self.stop_keywords, who)
        policy = check_history(self.history, who)
        self._policy = policy
        loop: list[Hooks] = [] if policy is None else [ApplyHistory(policy)]
        if self.nudge is not None:
            loop.append(Nudge(self.nudge))
        self._loop_hooks = tuple(loop)
        given = check_tool_list(self.tools, who)
        self.handoffs = {h.name: h for h in given if isinstance(h, Handoff)}
        tools: list[AnyTool] = [t for t in given if not isinstance(t, Handoff)]
        if self._output is not None:  # typed results: a submit tool taking the type
            self.submit_tool = self._output.tool
            self._hooks = (*self._hooks, self._output.hooks)
        elif self.submit is True:
            self.submit_tool = _default_submit()
        elif isinstance(self.submit, Tool):
            self.submit_tool = self.submit
        elif self.submit is not False:
            raise ConfigurationError(f"{who}: submit must be True, False or a Tool")
        if self.submit_tool is not None:
            tools.append(self.submit_tool)
        check_tools(tools, who)
        clash = sorted({t.name for t in tools} & set(self.handoffs))
        if clash:
            raise ConfigurationError(f"{who}: tool names must be unique; repeated: {clash}")
        self.tools, self.offered = given, tools  # (a generator given is read once)

    def __repr__(self) -> str:
        return f"{self._who}(name={self.name!r}, tools={[t.name for t in self.offered]})"

    async def __call__(self, state: AgentState) -> AgentState:
        model = get_model(self.model)
        tools = offered_tools(self.offered, state)
        if any(t.needs_spec for t in tools):  # a spec a model writes (_specs.py)
            await write_missing_specs(tools)
        offered: list[Any] = [*tools, *(h.tool for h in self.handoffs.values())]
        install_prompt(state.messages, self.prompt)
        max_output = max_tool_output(model, self.config)
        loop = self._loop_hooks
        if self.progress_every is not None:  # one per run: it numbers the run's steps
            loop = (*loop, Progress(self.name, self.progress_every))
        hooks = HookRun.start_loop(loop, self._hooks)
        async with hooks.agent_scope(state) if hooks is not None else NOTHING:
            limits = own_limits(self.max_steps, self.time_limit, self.productive_time)
            try:
                # the time budget innermost: its exit turns its cancellation into the error
                with all_of(limits):
                    await self._loop(state, model, tools, offered, max_output, hooks)
            except LimitExceededError as ex:
                if not any(ex.limit is limit for limit in limits):
                    raise
                close_open_calls(state, f"Not run to the end: {ex}.")
                state.limit, state.completed = ex.info, "limit"
            finally:
                # however the agent stopped (stop keyword, limit, cancellation...), the
                # state never ends with a tool call that has no result: providers reject
                # those (but deferred calls wait, unanswered, for a person's decision)
                if state.completed != "waiting":
                    close_open_calls(state, NOT_RUN)
        return state

    async def _loop(
        self,
        state: AgentState,
        model: Model,
        tools: list[AnyTool],
        offered: list[Any],
        max_output: int | None,
        hooks: HookRun | None,
    ) -> None:
        format_errors = content_filtered = continues = overflows = 0
        by_name = {t.name: t for t in tools}
        bounds = self.recovery
        while True:
            if hooks is not None:
                await hooks.end_step(state)
            check_limits()
            if hooks is not None:  # (the history policy applies here: a loop hook)
                await hooks.begin_step(state)
            if hooks is None:
                with agent_step():
                    output = await model.generate(state.messages, offered, self.config)
            else:
                request = await hooks.request(state.messages, offered, self.config)
                with agent_step():  # (the loop's step, not the hooks' calls)
                    output = await model.generate(request.messages, request.tools, request.config)
                await hooks.after_model(output)

            if output.stop_reason == "model_length" and not output.tool_calls:
                overflows += 1
                if overflows > bounds.overflows:
                    state.output, state.completed = output, "model_length"
                    return
                await recover_overflow(state, self._policy)
                continue
            overflows = 0
            state.output = output
            message = output.message
            state.messages.append(message)

            if output.stop_reason == "content_filter":
                content_filtered += 1
                if content_filtered >= bounds.content_filter:
                    state.completed = "content_filter"
                    return
                state.messages.append(UserMessage(content=CONTENT_FILTER_RETRY))
                continue
            content_filtered = 0

            # a stop keyword ends the run once the tools asked for ran (a submit among
            # them is the answer)
            stop = has_stop_keyword(self._keywords, message.content)
            calls = message.tool_calls
            if calls or message.format_error is not None:
                if calls and await (
                    self._hand_off(state, output, tools, by_name, max_output, hooks)
                    if self.handoffs  # (else no layer between the loop and the tools)
                    else run_tool_calls(state, output, message, tools, by_name, max_output, hooks)
                ):
                    return
                if message.format_error is not None:  # a reply a text protocol could not read
                    state.messages.append(UserMessage(content=message.format_error))
                if stop:
                    state.completed = "stop_keyword"
                    return
                # every call unparseable: a format error (text protocols, bad JSON)
                if is_format_error(message):
                    format_errors += 1
                    if format_errors > bounds.format_errors:
                        state.completed = "format_errors"
                        return
                else:
                    format_errors = 0
                continue

            if stop:
                state.completed = "stop_keyword"
                return

            if output.stop_reason == "max_tokens":
                continues += 1
                if continues > bounds.max_tokens:
                    state.completed = "max_tokens"
                    return
                state.messages.append(UserMessage(content=MAX_TOKENS_CONTINUE))
                continue

            if self.nudge is not None:
                continue  # the next step's nudge asks it to go on
            if self.submit_tool is None:
                state.completed = "answer"
                return
            nudge = await self._continue_message(state)
            if nudge is None:
                state.completed = "continue_stopped"
                return
            state.messages.append(UserMessage(content=nudge))

    async def _hand_off(
        self,
        state: AgentState,
        output: ModelOutput,
        tools: list[AnyTool],
        by_name: dict[str, AnyTool],
        max_output: int | None,
        hooks: HookRun | None,
    ) -> bool:
        """Run the output's tool calls and a handoff (the agent has handoffs); True when
        the agent is done."""
        message = output.message
        handoffs = self.handoffs
        handoff_calls = [c for c in message.tool_calls if c.function in handoffs]
        if handoff_calls:
            others = [c for c in message.tool_calls if c.function not in self.handoffs]
            message = message.model_copy(update={"tool_calls": others})
        if await run_tool_calls(state, output, message, tools, by_name, max_output, hooks):
            return True
        if handoff_calls:
            first, *extra = handoff_calls
            for call in extra:
                state.messages.append(
                    ToolMessage(
                        tool_call_id=call.id,
                        function=call.function,
                        content="Only one handoff per turn; this one was ignored.",
                    )
                )
            await run_handoff(self.handoffs[first.function], first, state)
            return True
        return False

    async def _continue_message(self, state: AgentState) -> str | None:
        default = DEFAULT_CONTINUE.format(submit=self.submit_tool.name if self.submit_tool else "")
        handler = self.on_continue
        if handler is None:
            return default
        if isinstance(handler, str):
            return handler
        result = handler(state)
        if inspect.isawaitable(result):
            result = await result
        if result is False:
            return None
        if isinstance(result, str):
            return result
        return default


react = ReactAgent
"""``lw.react(...)`` makes a :class:`ReactAgent`: the standard loop."""
