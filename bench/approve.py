"""Deferred approval on a run of N steps whose last call a policy defers: what stopping,
deciding and continuing cost, next to the same run approved at once.

    python bench/approve.py                # 10, 100 and 400 steps
    python bench/approve.py 50 1000

Columns: the run until it waits (every step, then the pending call kept), ``approve``
(one decision recorded in the run store, from a fresh connection as another process
would), the continuation until the run is done (``lw.resume``: reading the run's resume
point, the decisions taken, the step answered from the store, the approved call run,
one more step), and the whole run with ``approval="ci"`` (no wait) for comparison.
Stopping should cost about nothing beyond the steps; the continuation is ``resume``'s
cost (it reads the run's events once).
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


def agent(n: int) -> lw.ReactAgent:
    @lw.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    @lw.tool
    async def deploy(env: str) -> str:
        """Deploy.

        Args:
            env: Where.
        """
        return f"deployed {env}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done >= n:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "done"})
        if done == n - 1:
            return lw.ModelOutput.for_tool_call("deploy", {"env": "prod"})
        return lw.ModelOutput.for_tool_call("add", {"a": done, "b": 1}, content="step")

    model = lw.get_model("mock", outputs=respond)
    return lw.react(tools=[add, deploy], prompt="Count.", max_steps=None, model=model)


async def once(n: int, db: Path, plain: Path) -> tuple[float, float, float, float]:
    policy = lw.defer_approval("deploy")
    began = time.perf_counter()
    state = await lw.run(agent(n), "Go.", db=db, approval=policy)
    waited = time.perf_counter() - began
    assert state.completed == "waiting" and state.run_id is not None
    began = time.perf_counter()
    lw.approve(state.run_id, all=True, db=db)
    decided = time.perf_counter() - began
    began = time.perf_counter()
    state = await lw.resume(state.run_id, agent=agent(n), db=db, approval=policy)
    continued = time.perf_counter() - began
    assert state.completed == "submit", state.completed
    began = time.perf_counter()
    state = await lw.run(agent(n), "Go.", db=plain, approval="ci")
    whole = time.perf_counter() - began
    assert state.completed == "submit"
    return waited, decided, continued, whole


def main(sizes: list[int], rounds: int = 3) -> None:
    print(
        f"{'steps':>6}  {'until waiting ms':>17}  {'approve ms':>11}  {'continue ms':>12}"
        f"  {'no wait (ci) ms':>16}"
    )
    with tempfile.TemporaryDirectory() as where:
        for n in sizes:
            figures = [
                asyncio.run(once(n, Path(where) / f"a-{n}-{r}.db", Path(where) / f"b-{n}-{r}.db"))
                for r in range(rounds)
            ]
            med = [statistics.median(f[i] for f in figures) * 1000 for i in range(4)]
            print(f"{n:>6}  {med[0]:>17.1f}  {med[1]:>11.2f}  {med[2]:>12.1f}  {med[3]:>16.1f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 100, 400])
