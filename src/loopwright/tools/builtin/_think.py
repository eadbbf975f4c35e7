"""``think()``: a scratchpad tool that lets the model reason without acting."""

# no ``from __future__ import annotations``: the thought's annotation is built at run time
from typing import Annotated

from pydantic import Field

from .._tool import Tool, tool

__all__ = ["think"]

_DESCRIPTION = (
    "Think about something before acting: plan, check your reasoning, weigh options.\n\n"
    "This fetches no information and changes nothing; it only records the thought. Use it "
    "when a problem needs several steps of reasoning, to check a plan against the rules "
    "you were given, or to make sense of what tools returned."
)
_THOUGHT = "Your thinking, in as much detail as helps."


def think(name: str = "think", *, description: str = _DESCRIPTION) -> Tool[[str], str]:
    """A tool taking one string, ``thought``, that does nothing: room for the model to reason.

    Like every built-in tool, it is made by calling its factory: ``tools=[lw.think()]``.
    Calls may run in parallel with other parallel calls; the result is empty.

    Args:
        name: The tool's name.
        description: What the model is told about it.
    """

    def think(thought: Annotated[str, Field(description=_THOUGHT)]) -> str:
        return ""

    made = tool(name=name, description=description, parallel=True, defer=True)(think)
    made._inline = True  # it only returns: no worker thread
    return made
