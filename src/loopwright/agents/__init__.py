"""Agents: the state they work on, the standard loops, running them, composing them."""

from ._fork import fork
from ._handoff import Handoff, as_tool, handoff
from ._iterative import IterativeAgent, iterative
from ._lifecycle import Hooks, ModelRequest, StopRun
from ._react import ContinueHandler, ReactAgent, react
from ._run import run, run_sync
from ._state import Agent, AgentState, Ending, agent, get_agent, registered_agents
from ._steps import Recovery
from ._stream import RunStream, run_stream
from ._stream_events import (
    ModelReplied,
    RunFinished,
    StepFinished,
    StreamEvent,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = [
    "Agent",
    "AgentState",
    "ContinueHandler",
    "Ending",
    "Handoff",
    "Hooks",
    "IterativeAgent",
    "ModelReplied",
    "ModelRequest",
    "ReactAgent",
    "Recovery",
    "RunFinished",
    "RunStream",
    "StepFinished",
    "StopRun",
    "StreamEvent",
    "ToolCallFinished",
    "ToolCallStarted",
    "agent",
    "as_tool",
    "fork",
    "get_agent",
    "handoff",
    "iterative",
    "react",
    "registered_agents",
    "run",
    "run_stream",
    "run_sync",
]
