"""Agents: the state they work on, the standard loops, their hooks, composing them.

Running one (``lw.run``) is the run scope's work: ``loopwright.runtime``."""

from ._fork import fork
from ._handoff import Handoff, as_tool, handoff
from ._iterative import IterativeAgent, iterative
from ._lifecycle import Hooks, ModelRequest, StopRun
from ._react import ContinueHandler, ReactAgent, react
from ._state import Agent, AgentState, Completion, agent, get_agent, registered_agents

__all__ = [
    "Agent",
    "AgentState",
    "Completion",
    "ContinueHandler",
    "Handoff",
    "Hooks",
    "IterativeAgent",
    "ModelRequest",
    "ReactAgent",
    "StopRun",
    "agent",
    "as_tool",
    "fork",
    "get_agent",
    "handoff",
    "iterative",
    "react",
    "registered_agents",
]
