"""A researcher that reads local documents in parallel subtasks, then answers.

    python examples/researcher.py "How long do worker bees live?"
    python examples/researcher.py -m openai/gpt-4o-mini "Which is older: tea or the Pharos?"

Each document in ``docs/`` is read by its own subtask (run concurrently with
``asyncio.gather``): a model call that pulls out the notes relevant to the question.
Each subtask has its own store and transcript, nested in the run's transcript, so the
run store shows which document said what. A last call writes the answer from the notes.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import loopwright as lw

DOCS = Path(__file__).parent / "docs"
QUESTION = "How long do worker bees live, and how long can a queen live?"

READ = (
    "Here is a document.\n\n<document name={name!r}>\n{text}\n</document>\n\n"
    "Question: {question}\n\nCopy the facts from the document that help answer the "
    "question, as short notes. If nothing in it helps, reply with just NONE."
)
ANSWER = (
    "Answer the question using only these notes from the documents.\n\n{notes}\n\n"
    "Question: {question}\n\nAnswer in one or two sentences and name the documents you "
    "used. If the notes do not answer it, say so."
)


@lw.subtask
async def read_document(path: Path, question: str) -> str:
    """Notes from one document for the question ("NONE" when it has nothing)."""
    text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    prompt = READ.format(name=path.name, text=text.strip(), question=question)
    output = await lw.get_model().generate([lw.UserMessage(content=prompt)])
    lw.store().set("notes", output.text)  # the subtask's own store, kept in the run
    return output.text.strip()


@lw.agent
def researcher(docs: str | Path = DOCS) -> lw.Agent:
    """Reads every ``*.txt`` in ``docs`` in parallel, then answers from the notes."""
    folder = Path(docs)

    async def research(state: lw.AgentState) -> lw.AgentState:
        question = next(m.text for m in reversed(state.messages) if m.role == "user")
        paths = await asyncio.to_thread(lambda: sorted(folder.glob("*.txt")))
        if not paths:
            raise lw.ConfigurationError(f"no .txt documents in {str(folder)!r}")
        notes = await asyncio.gather(*(read_document(p, question) for p in paths))
        useful = [
            f"[{p.name}] {n}"
            for p, n in zip(paths, notes, strict=True)
            if n and n.strip().upper().rstrip(".") != "NONE"
        ]
        lw.store().set("sources", [u.split("]")[0][1:] for u in useful])
        prompt = ANSWER.format(notes="\n\n".join(useful) or "(no notes)", question=question)
        state.messages.append(lw.UserMessage(content=prompt))
        output = await lw.get_model().generate(state.messages)
        state.messages.append(output.message)
        state.output, state.completed = output, "answer"
        return state

    research.__name__ = "researcher"
    return research


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", "-m", default=None, help="default: the embedded model")
    parser.add_argument("--docs", default=str(DOCS), help="a folder of .txt documents")
    args = parser.parse_args()
    with lw.console_display():
        state = lw.run_sync(
            researcher(args.docs), args.question, model=args.model, limits=[lw.time_limit(600)]
        )
    print(state.text)


if __name__ == "__main__":
    main()
