"""``react()``: the standard agent loop — generate, run the tools asked for, repeat."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

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
from ..model.protocols import is_format_error
from ..tools import Tool
from ._checks import (
    check_callable,
    check_config,
    check_count,
    check_history,
    check_model,
    check_text,
    check_tool_list,
)
from ._handoff import Handoff, run_handoff
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
    own_step_limit,
    recover_overflow,
    run_tool_calls,
)
from ._steps import stop_keywords as stop_keywords_of
from ._typed import DEFAULT_OUTPUT_RETRIES, typed_output

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


class ReactAgent:
    """The standard loop, built by :func:`react`. Call it with an :class:`AgentState`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        prompt: str | None,
        tools: Sequence[ToolLike],
        model: str | Model | None,
        submit: bool | AnyTool,
        on_continue: ContinueHandler | None,
        max_steps: MaxSteps,
        stop_keywords: str | Sequence[str] | None,
        history: HistoryPolicy | HistoryFunction | None,
        config: GenerateConfig | None,
        max_format_errors: int,
        max_content_filter: int,
        max_tokens_continues: int,
        max_overflow_recoveries: int,
        hooks: Sequence[Hooks] = (),
        output: Any = None,
        max_output_retries: int = DEFAULT_OUTPUT_RETRIES,
    ) -> None:
        who = "react"
        self.hooks = check_hooks(hooks, who)
        self.output_type = typed_output(output, submit, max_output_retries, who)
        check_text(name, "name", who)
        check_text(description, "description", who)
        check_text(prompt, "prompt", who, optional=True)
        check_model(model, who)
        check_config(config, who)
        if on_continue is not None and not isinstance(on_continue, str):
            check_callable(on_continue, "on_continue", who, "a string, a function or None")
        for what, count in [
            ("max_format_errors", max_format_errors),
            ("max_content_filter", max_content_filter),
            ("max_tokens_continues", max_tokens_continues),
            ("max_overflow_recoveries", max_overflow_recoveries),
        ]:
            check_count(count, what, who)
        tools = check_tool_list(tools, who)
        self.name, self.description, self.prompt = name, description, prompt
        self.model, self.config = model, config
        self.history = check_history(history, who)
        self.on_continue = on_continue
        self.max_steps = check_max_steps(max_steps, who)
        self.stop_keywords = stop_keywords_of(stop_keywords, who)
        self.max_format_errors = max_format_errors
        self.max_content_filter = max_content_filter
        self.max_tokens_continues = max_tokens_continues
        self.max_overflow_recoveries = max_overflow_recoveries
        self.handoffs = {h.name: h for h in tools if isinstance(h, Handoff)}
        self.tools: list[AnyTool] = [t for t in tools if not isinstance(t, Handoff)]
        self.submit_tool: AnyTool | None = None
        if self.output_type is not None:  # typed results: a submit tool taking the type
            self.submit_tool = self.output_type.tool
            self.hooks = (*self.hooks, self.output_type.hooks)
        elif submit is True:
            self.submit_tool = _default_submit()
        elif isinstance(submit, Tool):
            self.submit_tool = submit
        elif submit is not False:
            raise ConfigurationError("submit must be True, False or a Tool")
        if self.submit_tool is not None:
            self.tools.append(self.submit_tool)
        check_tools(self.tools, "react")
        clash = sorted({t.name for t in self.tools} & set(self.handoffs))
        if clash:
            raise ConfigurationError(f"react: tool names must be unique; repeated: {clash}")

    def __repr__(self) -> str:
        return f"react(name={self.name!r}, tools={[t.name for t in self.tools]})"

    async def __call__(self, state: AgentState) -> AgentState:
        model = get_model(self.model)
        tools = offered_tools(self.tools, state)
        offered: list[Any] = [*tools, *(h.tool for h in self.handoffs.values())]
        install_prompt(state.messages, self.prompt)
        max_output = max_tool_output(model, self.config)
        hooks = HookRun.start(self.hooks)
        if hooks is None:
            return await self._run(state, model, tools, offered, max_output, None)
        async with hooks.agent_scope(state):
            await self._run(state, model, tools, offered, max_output, hooks)
        return state

    async def _run(
        self,
        state: AgentState,
        model: Model,
        tools: list[AnyTool],
        offered: list[Any],
        max_output: int | None,
        hooks: HookRun | None,
    ) -> AgentState:
        limit = own_step_limit(self.max_steps)
        try:
            if limit is not None:
                with limit:
                    await self._loop(state, model, tools, offered, max_output, hooks)
            else:
                await self._loop(state, model, tools, offered, max_output, hooks)
        except LimitExceededError as ex:
            if limit is None or ex.limit is not limit:
                raise
            state.limit, state.completed = ex.info, "limit"
        finally:
            # however the agent stopped (stop keyword, limit, cancellation...), the state
            # never ends with a tool call that has no result: providers reject those
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
        while True:
            if hooks is not None:
                await hooks.end_step(state)
            check_limits()
            if hooks is not None:
                await hooks.begin_step(state)
            if self.history is not None:
                usage = state.output.usage if state.output is not None else None
                state.messages = await self.history.apply(state.messages, usage)
            if hooks is None:
                output = await model.generate(state.messages, offered, self.config)
            else:
                request = await hooks.request(state.messages, offered, self.config)
                output = await model.generate(request.messages, request.tools, request.config)
                await hooks.after_model(output)

            if output.stop_reason == "model_length" and not output.tool_calls:
                overflows += 1
                if overflows > self.max_overflow_recoveries:
                    state.output, state.completed = output, "model_length"
                    return
                await recover_overflow(state, self.history)
                continue
            overflows = 0
            state.output = output
            message = output.message
            state.messages.append(message)

            if output.stop_reason == "content_filter":
                content_filtered += 1
                if content_filtered >= self.max_content_filter:
                    state.completed = "content_filter"
                    return
                state.messages.append(UserMessage(content=CONTENT_FILTER_RETRY))
                continue
            content_filtered = 0

            # a stop keyword ends the run once the tools asked for ran (a submit among
            # them is the answer)
            stop = has_stop_keyword(self.stop_keywords, message.content)
            calls = message.tool_calls
            if calls or message.format_error is not None:
                if calls and await self._run_tools(
                    state, output, tools, by_name, max_output, hooks
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
                    if format_errors > self.max_format_errors:
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
                if continues > self.max_tokens_continues:
                    state.completed = "max_tokens"
                    return
                state.messages.append(UserMessage(content=MAX_TOKENS_CONTINUE))
                continue

            if self.submit_tool is None:
                state.completed = "answer"
                return
            nudge = await self._continue_message(state)
            if nudge is None:
                state.completed = "continue_stopped"
                return
            state.messages.append(UserMessage(content=nudge))

    async def _run_tools(
        self,
        state: AgentState,
        output: ModelOutput,
        tools: list[AnyTool],
        by_name: dict[str, AnyTool],
        max_output: int | None,
        hooks: HookRun | None,
    ) -> bool:
        """Run the output's tool calls (and a handoff); True when the agent is done."""
        message = output.message
        handoffs = self.handoffs
        handoff_calls = (
            [c for c in message.tool_calls if c.function in handoffs] if handoffs else []
        )
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


def react(
    *,
    name: str = "react",
    description: str = "A general agent that reasons and calls tools to complete a task.",
    prompt: str | None = None,
    tools: Sequence[ToolLike] = (),
    model: str | Model | None = None,
    submit: bool | AnyTool = True,
    on_continue: ContinueHandler | None = None,
    max_steps: MaxSteps = "default",
    stop_keywords: str | Sequence[str] | None = None,
    history: HistoryPolicy | HistoryFunction | None = None,
    config: GenerateConfig | None = None,
    max_format_errors: int = 3,
    max_content_filter: int = 2,
    max_tokens_continues: int = 3,
    max_overflow_recoveries: int = 3,
    hooks: Sequence[Hooks] = (),
    output: Any = None,
    max_output_retries: int = DEFAULT_OUTPUT_RETRIES,
) -> ReactAgent:
    """The standard agent: generate, run the tool calls with ``execute_tools``, repeat.

    It ends when the model calls ``submit`` successfully (its answer becomes
    ``state.output``), when it answers without a tool call and ``submit=False``, when
    ``on_continue`` says stop, when a stop keyword appears in its text, or when a limit
    is reached (``state.limit``). ``state.completed`` says which. A setting of the wrong
    kind is refused here, with a :class:`~loopwright.ConfigurationError` naming what was
    expected.

    It is never unbounded by accident: unless ``max_steps`` is given or a step limit is
    in force when it starts (``run(limits=[lw.step_limit(n)])``, an outer agent's), it
    stops after :data:`~loopwright.DEFAULT_MAX_STEPS` (25) model calls, with
    ``state.limit`` saying so. An agent used as a tool or handed the conversation runs
    within its caller's step limit, which then counts its steps too.

    Args:
        name: The agent's name (used by ``as_tool`` and transcripts).
        description: What the agent does (used by ``as_tool``).
        prompt: A system prompt, placed first in the conversation.
        tools: The tools it may call; :func:`handoff` entries pass the conversation on.
        model: The model (default: the run's model).
        submit: ``True`` adds the built-in ``submit`` tool; a :class:`Tool` (terminal)
            uses that one; ``False`` ends the agent at the first answer without tools.
        on_continue: What to do when the model answers without a tool call while
            ``submit`` is on (see :data:`ContinueHandler`); default: a nudge.
        max_steps: At most this many model calls (a step limit for this agent, ending
            the agent with ``state.limit``). ``"default"``: :data:`~loopwright.DEFAULT_MAX_STEPS`
            unless a step limit is already in force; ``None``: no bound of its own (the
            limits in force still apply; without any, it runs until it answers).
        stop_keywords: End when any of these appears in the model's text (any case).
        history: How to keep the history bounded (see :mod:`loopwright.history`): a
            policy or a function ``messages -> messages`` (sync or async); also used for
            overflow recovery (default: truncate then prune).
        config: Generation settings for every call.
        max_format_errors: Consecutive replies whose tool calls all failed to parse
            before the agent gives up (``format_errors``).
        max_content_filter: Consecutive content-filtered replies before giving up.
        max_tokens_continues: How many times a reply cut by ``max_tokens`` is continued.
        max_overflow_recoveries: Consecutive context overflows recovered before giving up.
        hooks: :class:`~loopwright.Hooks` of this agent: they hear each run of it (its
            start, end, limit, error) and its steps, model calls and tool calls, after
            the run's hooks (``run(..., hooks=)``).
        output: A type for the final answer (a pydantic model, dataclass, TypedDict or
            JSON type): the submit tool takes an ``answer`` of that type, and
            ``state.result`` holds the validated value (see
            :mod:`loopwright.agents._typed`). Needs ``submit=True``.
        max_output_retries: Answers failing validation the model may correct before
            the run stops (:class:`~loopwright.StopRun`).
    """
    return ReactAgent(
        name=name,
        description=description,
        prompt=prompt,
        tools=tools,
        model=model,
        submit=submit,
        on_continue=on_continue,
        max_steps=max_steps,
        stop_keywords=stop_keywords,
        history=history,
        config=config,
        max_format_errors=max_format_errors,
        max_content_filter=max_content_filter,
        max_tokens_continues=max_tokens_continues,
        max_overflow_recoveries=max_overflow_recoveries,
        hooks=hooks,
        output=output,
        max_output_retries=max_output_retries,
    )
