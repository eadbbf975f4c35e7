"""``iterative()``: the standard loop preset for long, open-ended work in small steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ._checks import check_text
from ._react import ReactAgent
from ._state import AnyTool

__all__ = ["DEFAULT_NUDGE", "IterativeAgent", "iterative"]

DEFAULT_NUDGE = (
    "Continue with the next small step toward the goal. Use a tool; keep each step short. "
    "Time remaining: {remaining}."
)


@dataclass(kw_only=True, eq=False, repr=False)
class IterativeAgent(ReactAgent):
    """An agent for long open-ended work: small steps within a real-time budget.

    ``lw.iterative(...)`` makes one (``iterative`` is this class). It is the standard
    loop (:class:`ReactAgent`, with all its options) with other defaults: no ``submit``
    tool of its own (give one in ``tools`` for the model to end with its answer), a
    ``nudge`` saying the time left sent with each step, and a progress line every 10
    steps. Each step sends the conversation plus the ephemeral nudge, runs the tools
    asked for, and repeats until the ``time_limit`` or ``max_steps`` runs out
    (``state.limit`` says which), a stop keyword appears, or a terminal tool (e.g.
    ``submit``, if given in ``tools``) is called; an answer without a tool call goes on
    to the next step. The time budget is a :func:`~loopwright.time_limit` (with
    ``productive_time``, a :func:`~loopwright.working_limit`) entered for each run: the
    model call, tools or history policy at work when it runs out are cancelled.

    ``max_steps="default"``: with no ``time_limit`` and no step limit in force,
    :data:`~loopwright.DEFAULT_MAX_STEPS` (25), so the agent is never unbounded by
    accident; with either, no bound of its own.
    """

    name: str = "iterative"
    description: str = "An agent for long, open-ended work in small budgeted steps."
    submit: bool | AnyTool = False
    nudge: str | None = DEFAULT_NUDGE
    progress_every: int | None = 10

    _who: ClassVar[str] = "iterative"

    def __post_init__(self) -> None:
        check_text(self.nudge, "nudge", self._who)  # the preset's point: one is sent
        super().__post_init__()


iterative = IterativeAgent
"""``lw.iterative(...)`` makes an :class:`IterativeAgent`: the standard loop's preset for
long work within a time budget."""
