"""``fork()``: run agents on copies of a state, in parallel, each as a subtask.

The branches are recorded in the current transcript as ``SubtaskEvent``s of type
``"fork"`` through ``transcript.run_subtask``; each gets a copy of the current store.
Store and transcript are imported when a fork runs, so ``import loopwright`` stays lazy.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import Any, overload

from pydantic import JsonValue

from ._state import Agent, AgentState

__all__ = ["fork"]


def _agent_name(agent: Any, index: int) -> str:
    for attr in ("name", "__name__"):
        value = getattr(agent, attr, None)
        if isinstance(value, str) and value and value != "<lambda>":
            return value
    return f"fork-{index}"


def _copy_state(state: AgentState) -> AgentState:
    """A deep copy of ``state``, except its tools (shared: tools hold live resources)."""
    shared = ("tools", "extra_tools")
    return state.model_copy(
        update={
            name: copy.deepcopy(getattr(state, name))
            for name in type(state).model_fields
            if name not in shared
        }
        | {name: list(getattr(state, name)) for name in shared}
    )


def _summary(state: AgentState) -> JsonValue:
    return {
        "messages": len(state.messages),
        "completed": state.completed,
        "output": state.output.text if state.output is not None else None,
    }


@overload
async def fork(state: AgentState, agents: Agent) -> AgentState: ...
@overload
async def fork(state: AgentState, agents: Sequence[Agent]) -> list[AgentState]: ...
async def fork(state: AgentState, agents: Agent | Sequence[Agent]) -> AgentState | list[AgentState]:
    """Run each agent on its own deep copy of ``state``, in parallel, each as a subtask
    (with a copy of the current store), and return their final states in the agents'
    order. ``state`` itself is not changed. Use it to explore several trajectories and
    pick the best.

    Given a single agent (not a list), returns its state alone.
    """
    from ..stores import Store, current_store
    from ..transcripts import run_subtask

    single = not isinstance(agents, Sequence)
    group: list[Agent] = [agents] if single else list(agents)  # type: ignore[arg-type,list-item]
    parent_store = current_store()

    async def branch(index: int, agent: Agent) -> AgentState:
        branch_store = Store(parent_store.to_dict()) if parent_store is not None else Store()
        return await run_subtask(
            agent,
            (_copy_state(state),),
            name=_agent_name(agent, index),
            type="fork",
            store=branch_store,
            input={"branch": index, "messages": len(state.messages)},
            result=_summary,
        )

    states = await asyncio.gather(*(branch(i, a) for i, a in enumerate(group)))
    return states[0] if single else list(states)
