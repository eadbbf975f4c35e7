"""Start-up: ``import loopwright``, its first use, and ``loopwright --help``, next to
``import pydantic`` alone.

Each figure is the median over fresh interpreters. Targets (issue 22): ``import
loopwright`` at most 100 ms more than ``import pydantic``; ``loopwright --help`` under
300 ms. ``import loopwright`` loads no part: each public name loads its part on first
use, so the line "first use" (``lw.run`` looked up: the model, tools and agents parts)
says what a script that runs an agent pays before its first step.

    python bench/import_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CODE = "import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
CASES = {
    "import pydantic": "import pydantic, pydantic.main",
    "import loopwright": "import loopwright",
    "import loopwright + first use (lw.run)": "import loopwright; loopwright.run",
}


def measure(code: str, runs: int) -> float:
    """Seconds ``code`` takes in a fresh interpreter (median of ``runs``)."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-X", "frozen_modules=on", "-c", CODE.format(code=code)],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def measure_process(args: list[str], runs: int) -> float:
    """Wall seconds of ``python ARGS`` (the whole process), median."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


HELP = "loopwright --help (whole process)"
PROCESSES = {
    "python -c pass (the interpreter alone, whole process)": ["-c", "pass"],
    "loopwright --help (whole process)": ["-m", "loopwright", "--help"],
}


def measure_all(runs: int) -> dict[str, float]:
    """Every figure in milliseconds, measured side by side (interleaved runs)."""
    measure("import loopwright", 1)  # warm the OS file cache first
    samples: dict[str, list[float]] = {name: [] for name in [*CASES, *PROCESSES]}
    for _ in range(runs):
        for name, code in CASES.items():
            samples[name].append(measure(code, 1) * 1000)
        for name, args in PROCESSES.items():
            samples[name].append(measure_process(args, 1) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    figures = measure_all(args.runs)
    for name, ms in figures.items():
        print(f"{name:42} {ms:8.1f} ms  (median of {args.runs})")
    extra = figures["import loopwright"] - figures["import pydantic"]
    print(f"{'import loopwright beyond pydantic':42} {extra:8.1f} ms  (target <= 100 ms)")
    print(f"{'loopwright --help':42} {figures[HELP]:8.1f} ms  (target < 300 ms)")
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, loopwright; print(','.join(m for m in "
            "('openai','anthropic','llama_cpp','rich','jinja2','httpx','loopwright.model',"
            "'loopwright.sandboxes') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"modules of note loaded by 'import loopwright': {heavy or 'none'}")
    return figures


if __name__ == "__main__":
    main()
