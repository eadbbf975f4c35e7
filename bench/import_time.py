"""How long ``import loopwright`` takes, next to ``import pydantic`` alone.

Each import runs in a fresh interpreter, several times; the median is reported.
Target: loopwright costs at most 100 ms more than pydantic.

    python bench/import_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CODE = "import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"


def measure(module: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-X", "frozen_modules=on", "-c", CODE.format(mod=module)],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    # warm the OS file cache first
    measure("loopwright", 1)
    pyd = measure("pydantic, pydantic.main", args.runs)
    lw = measure("loopwright", args.runs)
    print(f"import pydantic    {pyd * 1000:8.1f} ms  (median of {args.runs})")
    print(f"import loopwright  {lw * 1000:8.1f} ms  (includes pydantic)")
    print(f"loopwright extra   {(lw - pyd) * 1000:8.1f} ms  (target <= 100 ms)")
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, loopwright; print(','.join(m for m in "
            "('openai','anthropic','llama_cpp','rich','jinja2','httpx') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"optional modules imported by 'import loopwright': {heavy or 'none'}")
    return {"pydantic_ms": pyd * 1000, "loopwright_ms": lw * 1000}


if __name__ == "__main__":
    main()
