"""What recording versions costs a run: one-step runs of the scripted model into a run
store, with ``run_metadata`` (versions of the agent and its tools) and without it,
alternating rounds, side by side; and ``run_versions`` alone by number of tools.

    python bench/versions.py [--runs 100] [--rounds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import loopwright as lw
from loopwright.agents._version import run_versions
from loopwright.runtime import _run, _versions


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def _without(agent: Any, tools: Any, metadata: Any, **_: Any) -> dict[str, Any]:
    return dict(metadata or {})


async def runs(rounds: int, count: int, db: Path) -> dict[str, float]:
    tools = [add, lw.bash(), lw.python(), lw.think()]
    agent = lw.react(prompt="Add.", tools=tools, submit=False)
    model = lw.get_model("mock", outputs=["done"], repeat=True)
    for _ in range(5):
        await lw.run(agent, "go", model=model, db=db)
    real = _versions.run_metadata
    times: dict[str, list[float]] = {"with versions": [], "without": []}
    try:
        for _ in range(rounds):
            for mode in times:
                _run.run_metadata = real if mode == "with versions" else _without  # type: ignore[assignment]
                start = time.perf_counter()
                for _ in range(count):
                    await lw.run(agent, "go", model=model, db=db)
                times[mode].append((time.perf_counter() - start) / count * 1e6)
    finally:
        _run.run_metadata = real
    return {mode: statistics.median(t) for mode, t in times.items()}


def alone(tools: int, count: int = 500) -> float:
    many = [lw.tool_with(add, name=f"add{i}") for i in range(tools)]
    agent = lw.react(prompt="Add.", tools=many)
    run_versions(agent)
    start = time.perf_counter()
    for _ in range(count):
        run_versions(agent)
    return (time.perf_counter() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        medians = asyncio.run(runs(args.rounds, args.runs, Path(folder) / "runs.db"))
    print("one-step run into a run store (4 tools + submit off), median us per run")
    for mode, us in medians.items():
        print(f"  {mode:<14} {us:8.0f}")
    print("run_versions alone, us per run, by number of tools")
    for n in (1, 10, 50):
        print(f"  {n:>3} tools      {alone(n):8.0f}")


if __name__ == "__main__":
    main()
