"""A calculator agent: a model that reasons and calls multiply / add / divide tools.

    python examples/calculator.py                      # the embedded model
    python examples/calculator.py --model openai/gpt-4o-mini "What is 465 * 321?"

The same tools from the command line:

    loopwright run "What is 465 times 321?" --tool examples/calculator.py:tools

The agent is registered as ``calculator`` (``lw.get_agent("calculator")``); the eval
task in ``arithmetic.py`` uses it.
"""

from __future__ import annotations

import argparse

import loopwright as lw

QUESTION = "What is 465 times 321, then add 95297, and then divide by 13.2?"

PROMPT = (
    "You are a careful calculator. Never do arithmetic in your head: call the tools, "
    "one operation at a time, using the result of one call in the next. When you have "
    "the final number, answer with it."
)


@lw.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


@lw.tool
def divide(a: float, b: float) -> float:
    """Divide one number by another.

    Args:
        a: The dividend.
        b: The divisor (not zero).
    """
    if b == 0:
        raise lw.ToolError("cannot divide by zero")
    return a / b


tools = [multiply, add, divide]
"""The calculator's tools (``--tool examples/calculator.py:tools``)."""


@lw.agent
def calculator(max_steps: int = 6) -> lw.Agent:
    """The calculator agent: answers when it has the number (no submit tool)."""
    return lw.react(
        name="calculator",
        description="Does arithmetic step by step with tools.",
        prompt=PROMPT,
        tools=tools,
        submit=False,
        max_steps=max_steps,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", "-m", default=None, help="default: the embedded model")
    args = parser.parse_args()
    with lw.console_display():
        state = lw.run_sync(
            calculator(),
            args.question,
            model=args.model,
            limits=[lw.time_limit(120)],
        )
    print(state.text or f"(no answer: {state.completed})")


if __name__ == "__main__":
    main()
