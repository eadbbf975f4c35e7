"""Agents: the state they work on, the standard loops, running them, composing them."""

from ._state import Agent, AgentState, Completion, agent, get_agent, registered_agents

__all__ = ["Agent", "AgentState", "Completion", "agent", "get_agent", "registered_agents"]
