"""A custom agent loop: generate, run tools, and check the answer before accepting it.

``lw.react()`` is the standard loop; when you need another shape, write the loop
yourself. An agent is any ``async (state) -> state``: it still gets limits, the run
store, transcripts and the live display from ``lw.run()``.

    python examples/custom_loop.py
    python examples/custom_loop.py -m openai/gpt-4o-mini "How many e's are in 'excellence'?"
"""

from __future__ import annotations

import argparse

import loopwright as lw

QUESTION = "How many letters are in the word 'loopwright', and how many of them are vowels?"

CHECK = (
    "Check your answer against the tool results above. If it is right, reply with "
    "exactly the same answer again. If not, correct it."
)


@lw.tool
def count_letters(text: str, letters: str = "") -> int:
    """Count the letters in a text.

    Args:
        text: The text.
        letters: Count only these letters (any case); empty counts every letter.
    """
    wanted = set(letters.lower())
    return sum(1 for c in text.lower() if c.isalpha() and (not wanted or c in wanted))


def checked_loop(tools: list[lw.Tool], *, max_checks: int = 2) -> lw.Agent:
    """A loop that asks the model to check its answer until it repeats it."""

    async def agent(state: lw.AgentState) -> lw.AgentState:
        model = lw.get_model()  # the run's model
        last_answer: str | None = None
        checks = 0
        while True:
            lw.check_limits()  # between steps: time, tokens... (model calls check too)
            output = await model.generate(state.messages, tools)
            state.messages.append(output.message)
            state.output = output
            if output.tool_calls:
                state.messages.extend(await lw.execute_tools(output.message, tools))
                continue
            answer = output.text.strip()
            if answer == last_answer or checks >= max_checks:
                state.completed = "answer"
                return state
            last_answer, checks = answer, checks + 1
            lw.transcript().info(f"checking answer {checks}: {answer}")
            state.messages.append(lw.UserMessage(content=CHECK))

    agent.__name__ = "checked_loop"
    return agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", "-m", default=None, help="default: the embedded model")
    args = parser.parse_args()
    with lw.console_display():
        state = lw.run_sync(
            checked_loop([count_letters]),
            args.question,
            model=args.model,
            limits=[lw.step_limit(12), lw.time_limit(300)],
        )
    print(state.text)


if __name__ == "__main__":
    main()
