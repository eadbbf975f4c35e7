"""``run()`` and ``run_sync()``: run an agent on an input within a run's context."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from .._errors import ConfigurationError
from ..limits import Limit, LimitExceededError, run_scope
from ..model import ChatMessage, Model, UserMessage, default_model, get_model
from ._state import Agent, AgentState

__all__ = ["run", "run_sync"]


def _initial_state(input: str | Sequence[ChatMessage] | AgentState) -> AgentState:
    if isinstance(input, AgentState):
        return input
    if isinstance(input, str):
        return AgentState(messages=[UserMessage(content=input)])
    if isinstance(input, Sequence):
        return AgentState(messages=list(input))
    raise ConfigurationError(
        "run: input must be a string, a list of messages or an AgentState, not "
        f"{type(input).__name__}"
    )


async def run(
    agent: Agent,
    input: str | Sequence[ChatMessage] | AgentState,
    *,
    model: str | Model | None = None,
    limits: Sequence[Limit] = (),
    tools: Sequence[Any] | None = None,
    raise_on_limit: bool = False,
) -> AgentState:
    """Run ``agent`` on ``input`` and return its final state.

    ``run`` opens the run's context: the default model (``get_model()`` inside the agent
    returns ``model``), the limits, and the run's store and transcript. When one of the
    run's limits (or a limit entered outside any run) ends it, ``run`` returns the state
    so far with ``state.limit`` set and ``state.completed == "limit"``; pass
    ``raise_on_limit=True`` to get :class:`LimitExceededError` instead. Errors that are
    not limits propagate.

    Args:
        agent: The agent to run.
        input: The task: a string (a user message), messages, or a state to continue.
        model: The model for the run (a name or a :class:`Model`); default: the current
            default (``$LOOPWRIGHT_MODEL``, else ``local``).
        limits: Limits for the whole run.
        tools: Extra tools offered to the agent (put in ``state.tools``).
        raise_on_limit: Raise instead of returning when a limit ends the run.
    """
    state = _initial_state(input)
    if tools is not None:
        state.tools = list(tools)
    with run_scope() as depth:
        try:
            # limits exit inside the try: a time limit turns its cancellation into
            # LimitExceededError on exit
            with contextlib.ExitStack() as stack:
                if model is not None:
                    stack.enter_context(default_model(get_model(model)))
                for limit in limits:
                    stack.enter_context(limit)
                return await agent(state)
        except LimitExceededError as ex:
            owned = ex.limit.depth == depth or (ex.limit.depth == 0 and depth == 1)
            if raise_on_limit or not owned:
                raise
            state.limit, state.completed = ex.info, "limit"
            return state


def run_sync(
    agent: Agent,
    input: str | Sequence[ChatMessage] | AgentState,
    **kwargs: Any,
) -> AgentState:
    """:func:`run` for scripts: runs the event loop until the agent is done.

    Not for use inside a running event loop (``await run(...)`` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run(agent, input, **kwargs))
    raise ConfigurationError("run_sync() called inside a running event loop; use await run()")
