"""``lw.resume`` on a run of N steps cancelled in its last tool call: how long reading the
resume point takes (one pass over the run's events) and how long the resume takes until
the run is done (the read, reopening the run, the step answered from the store, the call
in flight run again, one more step and ``submit``), next to the time a recorded step takes.

    python bench/resume.py                 # 100, 400 and 1,000 steps
    python bench/resume.py 50 2000

Reading the point should grow with the run's events (it reads each once) and stay well
under the time the run took to record; the resume's own cost should not depend on N
beyond that read.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import loopwright as lw
from loopwright.log._resume_point import resume_point


def agent(n: int, hang: asyncio.Event | None) -> lw.ReactAgent:
    @lw.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        if hang is not None and a == n - 2:
            hang.set()
            await asyncio.sleep(3600)
        return a + b

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done >= n - 1:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "done"})
        return lw.ModelOutput.for_tool_call("add", {"a": done, "b": 1}, content="step")

    model = lw.get_model("mock", outputs=respond)
    return lw.react(tools=[add], prompt="Count.", max_steps=None, model=model)


async def once(n: int, db: Path) -> tuple[float, float, float]:
    hang = asyncio.Event()
    began = time.perf_counter()
    task = asyncio.create_task(lw.run(agent(n, hang), "Go.", db=db))
    await hang.wait()
    recorded = time.perf_counter() - began
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    [info] = lw.list_runs(db)
    began = time.perf_counter()
    point = resume_point(info.id, db)
    read = time.perf_counter() - began
    assert point.last is not None and len(point.last.in_flight) == 1
    began = time.perf_counter()
    state = await lw.resume(info.id, agent=agent(n, None), db=db)
    resumed = time.perf_counter() - began
    assert state.completed == "submit", state.completed
    return recorded, read, resumed


def main(sizes: list[int], rounds: int = 3) -> None:
    print(f"{'steps':>6}  {'record µs/step':>15}  {'read point ms':>14}  {'resume ms':>10}")
    with tempfile.TemporaryDirectory() as where:
        for n in sizes:
            dbs = [Path(where) / f"runs-{n}-{r}.db" for r in range(rounds)]
            figures = [asyncio.run(once(n, db)) for db in dbs]
            rec = statistics.median(f[0] for f in figures) / n * 1e6
            read = statistics.median(f[1] for f in figures) * 1e3
            resumed = statistics.median(f[2] for f in figures) * 1e3
            print(f"{n:>6}  {rec:>15.0f}  {read:>14.1f}  {resumed:>10.1f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 400, 1000])
