"""``lw.replay`` next to the run it replays: wall time per step of recording a run of N
steps (scripted model, one trivial tool call per step, run store on) and of replaying it
(every output and tool result read from that store, every request compared).

    python bench/replay.py                 # 100, 400 and 1,000 steps
    python bench/replay.py 50 2000

A replay's step should cost about what a recorded step costs, whatever the step's
number: reading a step and comparing its request cost its new messages only.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import loopwright as lw


@lw.tool
async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return a + b


async def once(n: int, db: Path) -> tuple[float, float]:
    outputs: list[lw.ModelOutput | str] = [
        lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}, content="step") for i in range(n - 1)
    ]
    outputs.append(lw.ModelOutput.for_tool_call("submit", {"answer": "done"}))
    agent = lw.react(tools=[add], prompt="Count.", max_steps=None)
    began = time.perf_counter()
    state = await lw.run(agent, "Go.", model=lw.get_model("mock", outputs=outputs), db=db)
    recorded = time.perf_counter() - began
    assert state.run_id is not None
    began = time.perf_counter()
    result = await lw.replay(state.run_id, agent=agent, db=db)
    replayed = time.perf_counter() - began
    assert result.same and result.replayed_steps == n, result.divergence
    return recorded, replayed


def main(sizes: list[int], rounds: int = 3) -> None:
    print(f"{'steps':>6}  {'record µs/step':>15}  {'replay µs/step':>15}  ratio")
    with tempfile.TemporaryDirectory() as where:
        for n in sizes:
            dbs = [Path(where) / f"runs-{n}-{r}.db" for r in range(rounds)]
            figures = [asyncio.run(once(n, db)) for db in dbs]
            rec = statistics.median(f[0] for f in figures) / n * 1e6
            rep = statistics.median(f[1] for f in figures) / n * 1e6
            print(f"{n:>6}  {rec:>15.0f}  {rep:>15.0f}  {rep / rec:5.2f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 400, 1000])
