"""The standard loop's parts: its setup (tools, prompt, its own limits, how it recovers
from bad replies) and a step's tool calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from .._errors import ConfigurationError
from ..history import DEFAULT_OVERFLOW_POLICY, HistoryPolicy
from ..limits import (
    Limit,
    active_limits,
    default_step_limit,
    step_limit,
    time_limit,
    working_limit,
)
from ..model import (
    AssistantMessage,
    ChatMessage,
    GenerateConfig,
    Model,
    ModelOutput,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from ..tools import PendingCall, Tool, ToolDeferred, ToolTerminated, execute_tools
from ..tools._execute import ToolGate
from ..tools._tool_checks import not_a_tool
from ._state import AgentState, AnyTool, close_open_calls

__all__ = [
    "NOT_RUN",
    "OVERFLOW_HINT",
    "MaxSteps",
    "Recovery",
    "answer_output",
    "check_max_steps",
    "check_time_limit",
    "check_tools",
    "has_stop_keyword",
    "install_prompt",
    "max_tool_output",
    "offered_tools",
    "own_limits",
    "recover_overflow",
    "run_tool_calls",
    "stop_keywords",
]

NOT_RUN = "Not run: the agent stopped before running this call."
OVERFLOW_HINT = (
    "[Earlier messages were removed or shortened because the conversation no longer fit "
    "the model's context window.]"
)


MaxSteps: TypeAlias = int | Literal["default"] | None
"""An agent's own step bound: a number of model calls; ``None``: none of its own (only
the limits in force bound it); ``"default"``: :data:`~loopwright.DEFAULT_MAX_STEPS`
unless a step limit is already in force when the agent starts."""


def check_max_steps(max_steps: object, who: str) -> MaxSteps:
    """Refuse a ``max_steps`` that is not a positive whole number, None or "default"."""
    if max_steps is None or max_steps == "default":
        return max_steps
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ConfigurationError(
            f"{who}: max_steps must be a whole number >= 1, None (no bound of its own) or "
            f'"default", got {max_steps!r}'
        )
    return max_steps


def check_time_limit(seconds: object, who: str) -> None:
    """Refuse a time budget that is not a number of seconds > 0 (or None)."""
    if seconds is None:
        return
    number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    if not number or not 0 < seconds < float("inf"):  # type: ignore[operator]
        raise ConfigurationError(
            f"{who}: time_limit must be a number of seconds > 0, or None, got {seconds!r}"
        )


def own_limits(max_steps: MaxSteps, seconds: float | None, productive_time: bool) -> list[Limit]:
    """The limits an agent enters for one run, outermost first: its step bound (the
    default one unless a step limit is in force or it has a time budget), then its time
    budget (a working-time limit with ``productive_time``)."""
    limits: list[Limit] = []
    if max_steps == "default":
        if seconds is None and not any(lim.type == "step" for lim in active_limits()):
            limits.append(default_step_limit())
    elif max_steps is not None:
        limits.append(step_limit(max_steps))
    if seconds is not None:
        limits.append(working_limit(seconds) if productive_time else time_limit(seconds))
    return limits


@dataclass(frozen=True, slots=True)
class Recovery:
    """How many bad replies in a row the loop recovers from before it gives up; each
    gives up with its own ``state.completed``.

    ``lw.react(recovery=lw.Recovery(format_errors=5))``
    """

    format_errors: int = 3
    """Replies whose tool calls all failed to parse that are sent back with the error
    (then ``"format_errors"``)."""
    content_filter: int = 2
    """Content-filtered replies in a row that end the agent (``"content_filter"``):
    each before it is answered with a request to rephrase."""
    max_tokens: int = 3
    """Replies cut by the output token limit that are continued (then ``"max_tokens"``)."""
    overflows: int = 3
    """Context overflows recovered by shrinking the history (then ``"model_length"``)."""

    def __post_init__(self) -> None:
        for what in ("format_errors", "content_filter", "max_tokens", "overflows"):
            count = getattr(self, what)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigurationError(
                    f"Recovery: {what} must be a whole number >= 0, got {count!r}"
                )


def stop_keywords(keywords: str | Sequence[str] | None, who: str) -> list[str]:
    """The stop keywords, lower-cased; one string is one keyword (not its letters)."""
    if keywords is None:
        return []
    if isinstance(keywords, str):
        keywords = [keywords]
    bad = [k for k in keywords if not isinstance(k, str)]
    if bad:
        raise ConfigurationError(f"{who}: stop_keywords must be strings, got {bad[0]!r}")
    return [k.lower() for k in keywords if k]


def has_stop_keyword(keywords: list[str], text: str) -> bool:
    """Whether ``text`` holds one of ``keywords`` (lower-cased already), in any case."""
    if not keywords or not text:
        return False
    lowered = text.lower()
    return any(k in lowered for k in keywords)


def check_tools(tools: Sequence[Any], who: str) -> None:
    """Refuse what is not a tool, and names used twice, when the agent is made."""
    for t in tools:
        if not isinstance(t, Tool):
            raise ConfigurationError(f"{who}: {not_a_tool(t)}")
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(f"{who}: tool names must be unique; repeated: {dupes}")


def offered_tools(own: Sequence[AnyTool], state: AgentState) -> list[AnyTool]:
    """The agent's tools plus the run's extra ones (``state.extra_tools``; the agent's own
    win a name both use). ``state.tools`` becomes that list."""
    check_tools(state.extra_tools, "run(tools=...)")
    known = {t.name for t in own}
    tools = [*own, *(t for t in state.extra_tools if t.name not in known)]
    state.tools = tools
    return tools


def install_prompt(messages: list[ChatMessage], prompt: str | None) -> None:
    """Make ``prompt`` the conversation's system message: inserted first, or replacing
    another one (after a handoff, this agent's instructions rule)."""
    if prompt is None:
        return
    if messages and isinstance(messages[0], SystemMessage):
        if messages[0].content != prompt:
            messages[0] = SystemMessage(content=prompt)
    else:
        messages.insert(0, SystemMessage(content=prompt))


def max_tool_output(model: Model, config: GenerateConfig | None) -> int | None:
    """The most bytes of output a tool call may return: the agent's config, else the
    model's (``None``: the default)."""
    return model.config.merge(config).max_tool_output


async def recover_overflow(state: AgentState, history: HistoryPolicy | None) -> None:
    """Shrink the conversation after the model said it no longer fits its context."""
    policy = history or DEFAULT_OVERFLOW_POLICY
    reduced = await policy.reduce(state.messages)
    if reduced and not (
        isinstance(reduced[-1], UserMessage) and reduced[-1].content == OVERFLOW_HINT
    ):
        reduced.append(UserMessage(content=OVERFLOW_HINT))
    state.messages = reduced


def answer_output(output: ModelOutput, result: ToolMessage) -> ModelOutput:
    """The agent's output when a terminal tool answered: its result as a new message."""
    message = AssistantMessage(content=result.content, model=output.message.model)
    return replace(output, message=message, stop_reason="stop")


async def run_tool_calls(
    state: AgentState,
    output: ModelOutput,
    message: AssistantMessage,
    tools: list[AnyTool],
    by_name: dict[str, AnyTool],
    max_output: int | None,
    gate: ToolGate | None = None,
) -> bool:
    """Run ``message``'s tool calls and add their results; True when the agent is done (a
    terminal tool such as ``submit`` answered, an approval policy ended the run or
    deferred a call: ``state.completed == "waiting"``, the calls left unanswered).
    ``gate``: the lifecycle hooks in force (``HookRun``), if any."""
    try:
        results = await execute_tools(
            message, tools, max_output=max_output, messages=state.messages, gate=gate
        )
    except ToolTerminated as ex:
        state.messages.extend(ex.messages)
        close_open_calls(state, f"Not run: the run was terminated ({ex}).", "approval")
        state.completed = "terminated"
        return True
    except ToolDeferred as ex:  # the calls left open wait for a person's decision
        state.messages.extend(ex.messages)
        state.pending = [
            PendingCall(call=c, approver=a.approver, explanation=a.explanation)
            for c, a in ex.deferred
        ]
        state.completed = "waiting"
        return True
    state.messages.extend(results)
    for result in results:
        tool = by_name.get(result.function)
        if tool is not None and tool.terminal and result.error is None:
            state.output = answer_output(output, result)
            state.completed = "submit"
            return True
    return False
