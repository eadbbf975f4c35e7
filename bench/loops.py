"""The standard loop's own cost per step, by the options that add to a step.

    python bench/loops.py                        # this checkout
    python bench/loops.py --against /tmp/base    # side by side with another checkout

An agent of 50 native steps (``_scenarios``: ``add`` 49 times, then ``submit``) through
``lw.run(..., db=False)``, in each of these configurations:

- ``react``: no option that adds to a step;
- ``react + history``: a history policy that never acts (``prune_when(max_messages=10**6)``);
- ``react + hook``: one no-op :class:`~loopwright.Hooks` of the agent;
- ``iterative``: ``lw.iterative`` (its nudge and a progress line every 10 steps).

Figures: CPU µs per step beyond a 1-step run ((run of 50 - run of 1) / 49), the median
over the rounds; each side runs in its own interpreter, the sides alternate
(``--pairs`` times) and the medians of the sides' medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STEPS = 50


def _agents() -> dict[str, Any]:
    import loopwright as lw

    sys.path.insert(0, str(HERE))
    from _scenarios import add

    class NoOp(lw.Hooks):
        async def on_step_start(self, state: lw.AgentState) -> None:
            pass

    submit = lw.submit()
    return {
        "react": lw.react(tools=[add], max_steps=None),
        "react + history": lw.react(
            tools=[add], max_steps=None, history=lw.prune_when(max_messages=10**6)
        ),
        "react + hook": lw.react(tools=[add], max_steps=None, hooks=[NoOp()]),
        "iterative": lw.iterative(tools=[add, submit], max_steps=None, progress_every=10),
    }


async def _cpu(agent: Any, steps: int) -> float:
    import loopwright as lw

    sys.path.insert(0, str(HERE))
    from _scenarios import script

    model = lw.get_model("mock", outputs=script(steps, "native"))
    cpu = time.process_time()
    state = await lw.run(agent, "Add the numbers.", model=model, db=False)
    took = time.process_time() - cpu
    if state.completed != "submit":
        raise RuntimeError(f"the agent ended with {state.completed!r}")
    return took


async def _measure(rounds: int) -> dict[str, float]:
    agents = _agents()
    for agent in agents.values():  # warm up
        await _cpu(agent, STEPS)
    per_step: dict[str, list[float]] = {name: [] for name in agents}
    for _ in range(rounds):
        for name, agent in agents.items():
            long, short = await _cpu(agent, STEPS), await _cpu(agent, 1)
            per_step[name].append((long - short) / (STEPS - 1) * 1e6)
    return {name: statistics.median(values) for name, values in per_step.items()}


def _side(src: Path, rounds: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--rounds", str(rounds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.rounds))))
        return
    sides = {"this": HERE.parent / "src"}
    if args.against is not None:
        sides = {"other": args.against / "src", **sides}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for _ in range(args.pairs):
        for name, src in sides.items():
            runs[name].append(_side(src, args.rounds))
    configs = list(runs["this"][0])
    header = " | ".join(f"{name} CPU µs/step" for name in sides)
    print(f"| configuration | {header} |")
    print("|---|" + "---:|" * len(sides))
    for config in configs:
        cells = []
        for name in sides:
            values = [run[config] for run in runs[name] if config in run]
            cells.append(f"{statistics.median(values):.0f}" if values else "-")
        print(f"| {config} | {' | '.join(cells)} |")
    print(f"\nload average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
