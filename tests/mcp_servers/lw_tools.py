"""Loopwright tools and an agent, for ``loopwright mcp serve`` in the tests."""

from __future__ import annotations

import loopwright as lw


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def refuse(why: str) -> str:
    """Always refuses, with a message for the model.

    Args:
        why: What to say.
    """
    raise lw.ToolError(f"refused: {why}")


@lw.tool
def noisy(text: str) -> str:
    """Print to stdout (which a stdio MCP server must not), then answer.

    Args:
        text: What to answer.
    """
    print("noise on stdout\n{not json")
    return text


tools = [multiply, refuse, noisy]

helper = lw.react(
    name="helper",
    description="Answers any question with a fixed answer.",
    model=lw.get_model("mock", outputs=lambda messages, tools, config: "forty-two"),
    submit=False,
)
