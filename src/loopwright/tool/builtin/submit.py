"""``submit`` / ``finish``: the tools a model calls to give its final answer."""

# no ``from __future__ import annotations``: the answer's annotation is built at run time
from typing import Annotated

from pydantic import Field

from .._tool import Tool, tool

__all__ = ["finish", "submit", "submit_tool"]

_DESCRIPTION = (
    "Submit your final answer and end the task. Call it once, when you are done; "
    "the answer is what the user receives."
)


def submit_tool(
    name: str = "submit",
    *,
    description: str = _DESCRIPTION,
    answer_description: str = "The final answer.",
) -> Tool[[str], str]:
    """A terminal tool taking one string, ``answer``, that ends the agent with it.

    A successful call ends the agent; its result (the answer, unchanged) becomes the
    agent's output. Make variants with another name or wording::

        done = submit_tool("done", description="Report the result when finished.")

    Args:
        name: The tool's name.
        description: What the model is told about it.
        answer_description: What the model is told about the ``answer`` argument.
    """

    def submit(answer: Annotated[str, Field(description=answer_description)]) -> str:
        return answer

    made = tool(name=name, description=description, terminal=True, defer=True)(submit)
    made._inline = True  # it only returns its argument: no worker thread
    return made


submit = submit_tool()
"""The standard ``submit(answer)`` tool."""

finish = submit_tool("finish")
"""``submit`` under the name ``finish`` (the ``json`` tool protocol's way to answer)."""
