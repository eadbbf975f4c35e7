"""Multi-agent building blocks: an agent as a tool, and handing a conversation over."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._errors import ConfigurationError
from ..model import ToolCall, ToolInfo, ToolMessage, UserMessage
from ..tools import Tool
from ._state import Agent, AgentState, AnyTool

__all__ = ["Handoff", "as_tool", "handoff", "run_handoff"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _agent_name(agent: Agent, name: str | None) -> str:
    found = name or getattr(agent, "name", None) or getattr(agent, "__name__", None)
    if not found or not _NAME.match(found):
        raise ConfigurationError(
            f"agent tool name {found!r} must be 1-64 letters, digits, '_' or '-'; pass name="
        )
    return str(found)


def as_tool(
    agent: Agent,
    name: str | None = None,
    description: str | None = None,
    *,
    input_description: str = "The task or question for the agent, with all the context it needs.",
) -> AnyTool:
    """Wrap ``agent`` as a tool another agent can call.

    The tool takes one string (``input``); the agent runs on a fresh conversation holding
    it, under the limits in force, and the tool returns the agent's answer text.
    """
    tool_name = _agent_name(agent, name)
    info = ToolInfo(
        name=tool_name,
        description=description
        or getattr(agent, "description", "")
        or f"Run the {tool_name} agent.",
        parameters={
            "type": "object",
            "properties": {"input": {"type": "string", "description": input_description}},
            "required": ["input"],
            "additionalProperties": False,
        },
    )

    async def call_agent(input: str) -> str:
        state = await agent(AgentState(messages=[UserMessage(content=input)]))
        if state.limit is not None and not state.text:
            return f"The {tool_name} agent stopped without an answer: {state.limit.message}"
        return state.text

    return Tool.from_info(info, call_agent, parallel=True)


@dataclass(frozen=True)
class Handoff:
    """A way to pass the whole conversation to another agent; see :func:`handoff`."""

    agent: Agent
    name: str
    description: str
    tool: ToolInfo = field(init=False)

    def __post_init__(self) -> None:
        info = ToolInfo(
            name=self.name,
            description=self.description,
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
        )
        object.__setattr__(self, "tool", info)


def handoff(agent: Agent, name: str | None = None, description: str | None = None) -> Handoff:
    """Let an agent hand the conversation to ``agent``, which finishes the task.

    Put the result in another agent's ``tools``. The model sees a tool named
    ``transfer_to_<name>``; calling it passes the whole conversation to ``agent``, whose
    result becomes the calling agent's result.
    """
    base = _agent_name(agent, name)
    return Handoff(
        agent=agent,
        name=f"transfer_to_{base}"[:64],
        description=description
        or f"Hand the conversation over to the {base} agent. "
        + (getattr(agent, "description", "") or ""),
    )


async def run_handoff(target: Handoff, call: ToolCall, state: AgentState) -> AgentState:
    """Answer the handoff call, then let the target agent continue ``state``.

    The target gets the conversation and the run's extra tools (``state.extra_tools``),
    not the calling agent's own tools."""
    state.messages.append(
        ToolMessage(
            tool_call_id=call.id,
            function=call.function,
            content=f"You are now {target.name.removeprefix('transfer_to_')}; continue the task.",
        )
    )
    result = await target.agent(state)
    if result is not state:
        state.messages, state.output = result.messages, result.output
        state.limit, state.pending = result.limit, result.pending
    # (a limit, or deferred calls waiting for approval, is how the run ends too)
    ended = result.completed in ("limit", "waiting")
    state.completed = result.completed if ended else "handoff"
    return state
