"""``AgentState`` and the ``Agent`` protocol."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, overload, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .._errors import ConfigurationError
from ..limits import LimitInfo
from ..model import ChatMessage, ModelOutput, ToolCallErrorType
from ..tools import PendingCall, Tool

AnyTool: TypeAlias = Tool[..., Any]
"""Any :class:`~loopwright.Tool`, whatever its signature."""

__all__ = [
    "Agent",
    "AgentState",
    "AnyTool",
    "Ending",
    "agent",
    "get_agent",
    "registered_agents",
]

Ending: TypeAlias = Literal[
    "submit",
    "answer",
    "stop_keyword",
    "limit",
    "content_filter",
    "format_errors",
    "continue_stopped",
    "terminated",
    "max_tokens",
    "model_length",
    "handoff",
    "stopped",
    "waiting",
]
"""Why an agent stopped:

- ``submit``: it called its terminal tool (``submit``) with an answer;
- ``answer``: it answered without calling a tool (agents with ``submit=False``);
- ``stop_keyword``: a stop keyword appeared in its text;
- ``limit``: a limit was reached (``state.limit`` says which);
- ``content_filter``: the provider filtered its output repeatedly;
- ``format_errors``: too many unparseable replies in a row (text protocols);
- ``continue_stopped``: ``on_continue`` said to stop;
- ``terminated``: an approval policy terminated the run;
- ``max_tokens``: it ran out of output tokens and continuing was not asked for;
- ``model_length``: the context overflowed and could not be recovered;
- ``handoff``: it handed the conversation to another agent, which finished;
- ``stopped``: a hook raised :class:`~loopwright.StopRun` (``state.error`` says why);
- ``waiting``: an approval policy deferred calls: the run waits for a person's decision
  (``state.pending``; decide with ``lw.approve``, continue with ``lw.resume``).
"""


class AgentState(BaseModel):
    """What an agent works on: the conversation, the output so far, the tools in play.

    Agents receive a state and return it (usually the same object, with messages added).
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    messages: list[ChatMessage] = Field(default_factory=list)
    """The conversation; the agent appends to it."""
    output: ModelOutput | None = None
    """The agent's result: the answer (``output.text``) and the last model call's details."""
    tools: list[Any] = Field(default_factory=list, exclude=True)
    """The :class:`~loopwright.Tool`\\ s the agent offered the model, set by the agent
    (not serialised)."""
    extra_tools: list[Any] = Field(default_factory=list, exclude=True)
    """Tools offered beside the agent's own (``run(..., tools=)``), kept at a handoff;
    an agent's own tools never pass to the next agent (not serialised)."""
    result: Any = Field(default=None, exclude=True)
    """The typed answer of an agent made with ``output=`` (``react(output=MyModel)``):
    the validated value, once it submitted one (not serialised; ``output.text`` has it
    as JSON)."""
    completed: Ending | None = None
    """Why the agent stopped, once it has."""
    limit: LimitInfo | None = None
    """The limit that ended the run, if one did."""
    error: str | None = None
    """Why the run could not be completed, when the state comes with an error rather than
    a normal return: set by ``run()`` on the state it attaches to a
    :class:`~loopwright.RunStoreError` (the run store failed), or the reason a hook
    stopped the run (:class:`~loopwright.StopRun`). An agent that raises
    propagates its error; the run store records it."""
    run_id: str | None = None
    """The id of the run that made this state: ``lw.load_run(state.run_id, db=...)``
    opens it (``loopwright runs show RUN_ID``), with no guessing at "the latest". Set by
    ``run()`` when the run starts (a state given to ``run()`` to continue gets the new
    run's id); ``None`` for a state no ``run()`` has had. A run inside another run (an
    agent used as a tool) is part of the outer run and has its id. A run with
    ``db=False`` has an id too (it tells runs apart, e.g. in your own logs), but no run
    store holds it: loading it fails with "no run" rather than opening another run, as
    ``load_run(None)`` (the latest) would."""

    pending: list[PendingCall] = Field(default_factory=list)
    """The calls an approval policy deferred (``completed == "waiting"``): the run
    waits for a person's decision about them. The conversation ends with the assistant
    message that asked for them, unanswered."""

    cost: float | None = None
    """Dollars the run's model calls cost (``lw.cost_of``: the price table and each
    call's usage), every call made inside the run counted, sub-agents' too. Set by
    ``run()`` when the run ends. ``None`` before that, and when no call had a known
    price (never 0 for an unknown price); when some calls had no known price it is the
    priced calls' part, and ``cost_known`` is ``False``."""
    unpriced_calls: int = 0
    """The run's model calls whose cost is not known (no price for the model that
    answered, or no usage reported): not counted in ``cost``."""

    @property
    def cost_known(self) -> bool:
        """Whether ``cost`` is the whole cost of the run: every call had a known price."""
        return self.cost is not None and self.unpriced_calls == 0

    @property
    def text(self) -> str:
        """The answer's text ("" when there is no output yet)."""
        return self.output.text if self.output is not None else ""


@runtime_checkable
class Agent(Protocol):
    """An agent: ``await agent(state) -> state``."""

    async def __call__(self, state: AgentState) -> AgentState: ...


_registry: dict[str, Callable[..., Agent]] = {}

F = TypeVar("F", bound=Callable[..., Agent])


@overload
def agent(factory: F, /) -> F: ...
@overload
def agent(*, name: str | None = None) -> Callable[[F], F]: ...
def agent(factory: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Register an agent factory by name (``@agent`` or ``@agent(name="x")``).

    The factory takes keyword arguments and returns an :class:`Agent`; the CLI and eval
    files find agents by this name with :func:`get_agent`.
    """

    def register(f: F) -> F:
        _registry[name or f.__name__] = f
        return f

    return register(factory) if factory is not None else register


def registered_agents() -> dict[str, Callable[..., Agent]]:
    """Every agent factory registered with :func:`agent`, by name."""
    return dict(_registry)


def get_agent(name: str, **kwargs: Any) -> Agent:
    """Build the registered agent ``name`` with ``kwargs``."""
    try:
        factory = _registry[name]
    except KeyError:
        known = ", ".join(sorted(_registry)) or "none"
        raise ConfigurationError(f"no agent named {name!r}; registered: {known}") from None
    return factory(**kwargs)


def close_open_calls(
    state: AgentState, explanation: str, error_type: ToolCallErrorType = "limit"
) -> None:
    """Answer every tool call of the last assistant message that has no result yet, so
    the conversation never ends with a dangling call (providers reject those)."""
    from ..model import AssistantMessage, ToolCallError, ToolMessage

    answered: set[str] = set()
    for m in reversed(state.messages):
        if isinstance(m, ToolMessage):
            answered.add(m.tool_call_id)
        elif isinstance(m, AssistantMessage):
            for call in m.tool_calls:
                if call.id not in answered:
                    state.messages.append(
                        ToolMessage(
                            tool_call_id=call.id,
                            function=call.function,
                            content=explanation,
                            error=ToolCallError(type=error_type, message=explanation),
                        )
                    )
            return
