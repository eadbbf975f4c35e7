"""A run to kill and resume: ``python _resume_script.py DB SIDE start|resume [RUN_ID]``.

The scripted model calls ``work(i=N)`` with N the number of tool results so far, for ever;
a step limit of 10 ends the run. ``work`` flushes the run store, appends ``start N`` to
the side-effect file, sleeps (for ever when N is ``$HANG_AT``: the test kills it there),
and appends ``end N``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

import loopwright as lw

DB, SIDE, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
HANG_AT = int(os.environ.get("HANG_AT", "-1"))


def note(line: str) -> None:
    with open(SIDE, "a") as f:
        f.write(line + "\n")


@lw.tool
async def work(i: int) -> str:
    """Do step i of the work.

    Args:
        i: The step.
    """
    rec = lw.current_recording()
    assert rec is not None
    await rec.flush()  # what came before is in the store when the test kills us
    note(f"start {i}")
    lw.store().set("last", i)
    lw.store().get("done", []).append(i)
    await asyncio.sleep(3600 if i == HANG_AT else 0.01)
    note(f"end {i}")
    return f"did {i}"


def respond(
    messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: lw.GenerateConfig
) -> lw.ModelOutput:
    done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
    return lw.ModelOutput.for_tool_call("work", {"i": done}, content=f"step {done}")


def agent(tools: Sequence[lw.Tool] = (work,)) -> lw.ReactAgent:
    return lw.react(name="worker", tools=list(tools), model=lw.get_model("mock", outputs=respond))


async def main() -> None:
    if MODE == "start":
        state = await lw.run(agent(), "Work.", limits=[lw.step_limit(10)], db=DB)
    else:
        state = await lw.resume(sys.argv[4], agent=agent(), db=DB, limits=[lw.step_limit(10)])
    print("RUN", state.run_id, state.completed, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
