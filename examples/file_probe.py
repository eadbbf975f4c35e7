"""A file-probe agent: it explores files in a sandbox with shell commands.

    python examples/file_probe.py                     # bwrap sandbox, the embedded model
    python examples/file_probe.py --sandbox local --model openai/gpt-4o-mini

The sandbox is a fresh private folder (``bwrap``: isolated, no network); the agent gets
the ``bash`` and ``files`` tools, which run there and nowhere else. The same from the
command line, on your own question:

    loopwright run "Which file in the working folder is the largest?" --tool bash
"""

from __future__ import annotations

import argparse
import asyncio

import loopwright as lw

QUESTION = (
    "There are some files in the working folder. Which one has the most lines, and how "
    "many lines does it have?"
)

FILES = {
    "notes/todo.txt": "buy milk\ncall the plumber\nwrite the report\n",
    "notes/ideas.md": "# Ideas\n\n- a bird feeder\n- a reading lamp\n",
    "data/numbers.csv": "n,square\n" + "".join(f"{i},{i * i}\n" for i in range(1, 13)),
    "README": "Probe me.\n",
}

PROMPT = (
    "You explore files with the bash tool (ls, wc, head, find...) and the files tool. "
    "Look before you answer: run commands, read their output, then answer the question "
    "in one sentence."
)


@lw.agent
def file_probe(max_steps: int = 10) -> lw.Agent:
    """An agent with bash and files tools (they need a sandbox: see ``main``)."""
    return lw.react(
        name="file_probe",
        prompt=PROMPT,
        tools=[lw.bash(timeout=30), lw.files()],
        submit=False,
        max_steps=max_steps,
    )


async def probe(
    question: str = QUESTION,
    *,
    model: str | lw.Model | None = None,
    sandbox: str = "bwrap",
    db: str | None = None,
) -> lw.AgentState:
    """Start a sandbox, put the example files in it, and let the agent probe them."""
    async with lw.use_sandbox(sandbox) as sb:
        for path, text in FILES.items():
            await sb.write_file(path, text)
        return await lw.run(file_probe(), question, model=model, limits=[lw.time_limit(300)], db=db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", "-m", default=None, help="default: the embedded model")
    parser.add_argument("--sandbox", default="bwrap", help="bwrap (isolated) or local")
    args = parser.parse_args()
    with lw.console_display():
        state = asyncio.run(probe(args.question, model=args.model, sandbox=args.sandbox))
    print(state.text or f"(no answer: {state.completed})")


if __name__ == "__main__":
    main()
