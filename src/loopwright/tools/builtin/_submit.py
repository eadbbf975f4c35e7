"""``submit()``: the tool a model calls to give its final answer."""

# no ``from __future__ import annotations``: the answer's annotation is built at run time
from typing import Annotated

from pydantic import Field

from .._tool import Tool, tool

__all__ = ["submit"]

_DESCRIPTION = (
    "Submit your final answer and end the task. Call it once, when you are done; "
    "the answer is what the user receives."
)


def submit(
    name: str = "submit",
    *,
    description: str = _DESCRIPTION,
    answer_description: str = "The final answer.",
) -> Tool[[str], str]:
    """A terminal tool taking one string, ``answer``, that ends the agent with it.

    A successful call ends the agent; its result (the answer, unchanged) becomes the
    agent's output. Like every built-in tool, it is made by calling its factory
    (``tools=[lw.submit()]``; ``react()`` adds one itself). Make variants with another
    name or wording::

        done = submit("done", description="Report the result when finished.")
        finish = submit("finish")  # the name the ``json`` tool protocol answers with

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
