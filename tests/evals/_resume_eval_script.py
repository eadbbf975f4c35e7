"""An eval to kill and resume: ``python _resume_eval_script.py DB SIDE [RUN_ID]``.

Three samples run at once; each calls ``work(sample, i)`` for i = 0, 1, 2... and then
``submit``; ``$HANG`` makes every ``work(..., 1)`` hang (the test kills the process
there). The task has a step limit of 3, which the samples reach at their 4th step when
the steps of the killed run count.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

import loopwright as lw

DB, SIDE = sys.argv[1], sys.argv[2]
HANG = bool(os.environ.get("HANG"))


def note(line: str) -> None:
    with open(SIDE, "a") as f:
        f.write(line + "\n")


@lw.tool
async def work(sample: str, i: int) -> str:
    """Do step i of a sample's work.

    Args:
        sample: The sample's question.
        i: The step.
    """
    rec = lw.current_recording()
    assert rec is not None
    await rec.flush()  # what came before is in the store when the test kills us
    note(f"start {sample} {i}")
    await asyncio.sleep(3600 if HANG and i == 1 else 0.01)
    note(f"end {sample} {i}")
    return f"did {i}"


def respond(
    messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: lw.GenerateConfig
) -> lw.ModelOutput:
    question = next(m.content for m in messages if m.role == "user")
    done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
    if done == 3:
        return lw.ModelOutput.for_tool_call("submit", {"answer": question})
    return lw.ModelOutput.for_tool_call("work", {"sample": question, "i": done})


def main() -> None:
    data = [{"id": f"s{i}", "input": f"q{i}", "target": f"q{i}"} for i in range(3)]
    task = lw.Task(
        data, agent=lw.react(tools=[work]), scorer=lw.match(), limits=[lw.step_limit(3)], name="w"
    )
    resume = sys.argv[3] if len(sys.argv) > 3 else None
    model = lw.get_model("mock", outputs=respond)
    [result] = lw.eval(task, model=model, db=DB, max_samples=3, resume=resume)
    print("RUN", result.run_id, result.status, flush=True)


if __name__ == "__main__":
    main()
