"""``lw.diff_runs`` on two long runs: the diff's peak Python memory (tracemalloc).

    python bench/diff_memory.py [--steps 2000,20000] [--against OTHER/src] [--db DIR]

Two real runs of the scripted model in one run store, each of N steps (a model call
asking for a trivial ``add`` tool and its call); the second's last step adds another
number, so the diff reads both runs to the end, side by side, and finds that step. The
diff runs in a fresh process with ``tracemalloc`` on (the peak of what Python allocated
during ``diff_runs``, the runs' creation not counted; its time is that of a diff
before, without tracemalloc). ``--against`` measures another
source tree on the same stores beside this one (e.g. ``/work/main/src`` before a
change): one row per tree and N. Memory held by what a diff reads grows with N; memory
held by the step it compares does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


async def _run(db: Path, steps: int, last: int) -> str:
    import loopwright as lw

    @lw.tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        return a + b

    outputs = [lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}) for i in range(steps - 2)]
    outputs.append(lw.ModelOutput.for_tool_call("add", {"a": steps, "b": last}))
    outputs.append(lw.ModelOutput.for_tool_call("submit", {"answer": "done"}))
    model = lw.get_model("mock", outputs=outputs)
    agent = lw.react(tools=[add], max_steps=None)
    state = await lw.run(agent, "Count up.", model=model, db=db, name=f"count {steps}")
    return str(state.run_id)


def make_store(db: Path, steps: int) -> tuple[str, str]:
    """Two runs of ``steps`` steps in ``db`` (made once: kept in ``db``'s folder)."""
    ids = db.with_suffix(".json")
    if ids.exists():
        a, b = json.loads(ids.read_text())
        return str(a), str(b)
    a, b = asyncio.run(_run(db, steps, 1)), asyncio.run(_run(db, steps, 2))
    ids.write_text(json.dumps([a, b]))
    return a, b


def measure(db: str, a: str, b: str) -> dict[str, float]:
    """In this process: the diff's peak traced memory and its wall time."""
    import loopwright as lw

    start = time.perf_counter()
    lw.diff_runs(a, b, db=db)  # timed untraced: tracemalloc slows every allocation
    seconds = time.perf_counter() - start
    tracemalloc.start()
    diff = lw.diff_runs(a, b, db=db)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert diff.divergence is not None and diff.steps_a == diff.steps_b, diff
    return {"peak_mb": peak / 1e6, "seconds": seconds, "step": diff.divergence.step + 1}


def in_process(src: Path, db: Path, a: str, b: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(db), a, b],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="2000,20000", help="N, comma-separated")
    parser.add_argument("--against", type=Path, help="another source tree to measure beside")
    parser.add_argument("--db", type=Path, help="a folder to keep the stores in")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    trees = [("this tree", SRC)] + ([("against", args.against)] if args.against else [])
    folder = args.db or Path(tempfile.mkdtemp(prefix="diff-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'tree':<10} {'steps':>7} {'peak MB':>9} {'seconds':>8}  source")
    for n in (int(x) for x in args.steps.split(",")):
        db = folder / f"runs-{n}.db"
        a, b = make_store(db, n)
        for name, src in trees:
            r = in_process(src, db, a, b)
            print(f"{name:<10} {n:>7,} {r['peak_mb']:>9.1f} {r['seconds']:>8.2f}  {src}")


if __name__ == "__main__":
    main()
