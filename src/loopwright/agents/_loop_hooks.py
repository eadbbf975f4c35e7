"""The standard loop's own hooks: what an agent's options add to each step.

They are ordinary :class:`~loopwright.Hooks`, put in force by the loop itself ahead of
the run's and the agent's hooks (so those see their work: a pruned history, the nudge
in the request), and they hear no run start or end:

- :class:`ApplyHistory` (``history=``): the history policy, applied at each step's start;
- :class:`Nudge` (``nudge=``): an ephemeral message with the time left, added to each
  model request and never kept in the conversation;
- :class:`Progress` (``progress_every=``): a progress line every N steps, made for one
  run of the agent.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from ..history import HistoryPolicy
from ..limits import remaining_time
from ..model import UserMessage
from ._lifecycle import Hooks, ModelRequest
from ._state import AgentState

__all__ = ["ApplyHistory", "Nudge", "Progress", "format_remaining"]

logger = logging.getLogger("loopwright.agents")


def format_remaining(seconds: float | None) -> str:
    """The time left as a nudge says it ("unlimited" without a time limit in force)."""
    if seconds is None:
        return "unlimited"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


class ApplyHistory(Hooks):
    """Apply a history policy to the conversation at the start of each step."""

    def __init__(self, policy: HistoryPolicy) -> None:
        self.policy = policy

    async def on_step_start(self, state: AgentState) -> None:
        usage = state.output.usage if state.output is not None else None
        state.messages = await self.policy.apply(state.messages, usage)


class Nudge(Hooks):
    """Send ``template`` (its ``{remaining}``: the time left before the tightest time or
    working limit in force) after the conversation with each model call, without
    adding it to the conversation."""

    def __init__(self, template: str) -> None:
        self.template = template

    async def before_model(self, request: ModelRequest) -> ModelRequest:
        text = self.template.format(remaining=format_remaining(remaining_time()))
        # a new list: the conversation itself never holds the nudge (the copy is of
        # pointers, as the transcript's own copy of each call's input)
        messages = [*request.messages, UserMessage(content=text)]
        return dataclasses.replace(request, messages=messages)


class Progress(Hooks):
    """Record a progress line every ``every`` steps of one run of the agent ``name``: in
    the run's transcript, or in the ``loopwright.agents`` log outside a run."""

    def __init__(self, name: str, every: int) -> None:
        self.name, self.every = name, every
        self.started = time.monotonic()
        self.steps = 0  # what the progress lines number (the step bound is a step limit)

    async def on_step_start(self, state: AgentState) -> None:
        self.steps += 1
        if self.steps % self.every:
            return
        from ..transcripts import current_transcript

        elapsed = time.monotonic() - self.started
        message = (
            f"{self.name} agent: step {self.steps}, {elapsed:.1f}s elapsed, "
            f"{len(state.messages)} messages"
        )
        transcript = current_transcript()
        if transcript is not None:
            transcript.info(message)
        else:  # not inside a run: log it instead
            logger.info(message)
