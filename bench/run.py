"""loopwright's overhead, growth, concurrency and import time, against a bare asyncio floor.

    python bench/run.py            # the full run (a few minutes)
    python bench/run.py --quick    # fewer rounds and runs (about a minute)
    python bench/run.py --only per_step,growth

Prints the tables and writes them as markdown to ``bench/results/latest.md``. See
``bench/README.md`` for what each figure means and the figures recorded so far.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _concurrency  # noqa: E402
import _flat  # noqa: E402
import _growth  # noqa: E402
import _per_step  # noqa: E402
import import_time  # noqa: E402
import next_to_model  # noqa: E402
import state  # noqa: E402
from _report import Report  # noqa: E402
from _scenarios import Config  # noqa: E402

SECTIONS = ("per_step", "growth", "flat", "model", "concurrency", "import", "state")
GROWTH_CONFIGS = [
    Config("native"),
    Config("native + run store", store=True),
    Config("react", protocol="react"),
    Config("json", protocol="json"),
    Config("react + run store", protocol="react", store=True),
    Config("json + run store", protocol="json", store=True),
]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} / {five:.1f}"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(HERE), "status", "--porcelain", "--", "../src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out.stdout.strip() + (" (+ uncommitted changes in src/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def per_step(report: Report, steps: int, rounds: int, warmup: int, names: list[str] | None) -> None:
    configs = _per_step.CONFIGS
    if names:
        configs = [c for c in configs if c.name in names]
    figures = asyncio.run(_per_step.measure(steps, rounds, warmup, configs))
    floor = figures[_per_step.FLOOR]
    typed = figures[_per_step.TYPED_FLOOR]
    rows = []
    for name, f in figures.items():
        rows.append(
            [
                name,
                f"{f.wall:.1f}",
                f"{f.wall / floor.wall:.0f}x",
                f"{f.cpu:.1f}",
                f"{f.cpu / floor.cpu:.0f}x",
                f"{f.cpu / typed.cpu:.1f}x",
                f"{f.marginal_cpu:.1f}",
                f"{f.one_step_ms:.2f}",
            ]
        )
    report.table(
        f"Per-step overhead: one agent of {steps} steps (scripted model, trivial tool), "
        f"median of {rounds} rounds after {warmup} warm-up",
        [
            "configuration",
            "wall µs/step",
            "wall / floor",
            "CPU µs/step",
            "CPU / floor",
            "CPU / typed floor",
            "CPU µs/step beyond a 1-step run",
            "1-step run, ms",
        ],
        rows,
    )
    report.raw["per_step"] = {name: f.__dict__ for name, f in figures.items()}
    if "native" not in figures or "native + run store" not in figures:
        return
    off, on = figures["native"], figures["native + run store"]
    report.target(
        "per step, run store off, within 10x of the floor",
        f"{off.wall / floor.wall:.0f}x wall, {off.cpu / floor.cpu:.0f}x CPU",
        off.cpu / floor.cpu <= 10,
    )
    report.target(
        "per step, run store on, within 20x of the floor",
        f"{on.wall / floor.wall:.0f}x wall, {on.cpu / floor.cpu:.0f}x CPU",
        on.cpu / floor.cpu <= 20,
    )
    report.target(
        "run store on at most 1.5x off, per step, wall, in a process of many runs (issue 22)",
        f"{on.wall / off.wall:.2f}x wall, {on.cpu / off.cpu:.2f}x CPU",
        on.wall / off.wall <= 1.5,
    )


def growth(report: Report, steps: int, runs: int) -> None:
    rows = []
    worst = 0.0
    for config in GROWTH_CONFIGS:
        g = asyncio.run(_growth.measure(config, steps, runs))
        worst = max(worst, g.ratio) if config.protocol == "native" else worst
        rows.append(
            [
                g.name,
                f"{g.early_us:.1f}",
                f"{g.late_us:.1f}",
                f"{g.ratio:.2f}",
                f"{g.early_cpu_us:.1f}",
                f"{g.late_cpu_us:.1f}",
                f"{g.cpu_ratio:.2f}",
                f"{g.store_bytes_per_step:,.0f}" if g.store_bytes_per_step else "-",
                f"{g.payload_bytes_per_step:,.0f}" if g.payload_bytes_per_step else "-",
            ]
        )
        report.raw.setdefault("growth", {})[g.name] = {
            **g.__dict__,
            "ratio": g.ratio,
            "cpu_ratio": g.cpu_ratio,
        }
    late = f"step ~{steps - 10}"
    report.table(
        f"Growth: one run of {steps} steps, µs per step (median of {_growth.WINDOW} "
        f"steps, median of {runs} runs)",
        [
            "configuration",
            "wall step ~10",
            f"wall {late}",
            "wall ratio",
            "CPU step ~10",
            f"CPU {late}",
            "CPU ratio",
            "file B/step",
            "JSON B/step",
        ],
        rows,
    )
    report.target("step 1,000 costs <= 1.5x step 10 (native)", f"{worst:.2f}x", worst <= 1.5)


# (name, run store on, floor): each once, in a fresh process; the interleaved agents (every
# one alive at once: issue 22's case) are measured in rounds, see below
CONCURRENCY_SCENARIOS = [
    ("floor (bare asyncio)", False, True),
    ("loopwright", False, False),
    ("loopwright + run store", True, False),
]


def _memory_row(agents: int, name: str, r: dict[str, Any]) -> list[str]:
    if "steps_per_s" not in r or r["steps_per_s"] is None:
        return [f"{agents:,}", name, "failed", "", "", "", "", "", str(r.get("first_error"))]
    beyond = r["rss_per_agent"] - r["history_per_agent"]
    return [
        f"{agents:,}",
        name,
        f"{r['steps_per_s']:,.0f}",
        f"{r['steps_per_cpu_s']:,.0f}",
        f"{r['gc_share']:.0%}",
        f"{r['rss_per_agent'] / 1024:.1f}",
        f"{r['history_per_agent'] / 1024:.1f}",
        f"{beyond / 1024:.1f}",
        str(r["errors"]),
    ]


def concurrency(report: Report, counts: list[int], steps: int, rounds: int) -> None:
    folder = tempfile.mkdtemp(prefix="lw-bench-")
    rows = []
    figures: dict[tuple[int, str], dict[str, Any]] = {}
    for agents in counts:
        for name, store, floor in CONCURRENCY_SCENARIOS:
            db = os.path.join(folder, f"c{agents}.db") if store else None
            r = _concurrency.fresh_process(agents, steps, db, floor)
            report.raw.setdefault("concurrency", []).append({"name": name, **r})
            figures[agents, name] = r
            rows.append(_memory_row(agents, name, r))
    # interleaved: the counts in alternating fresh processes, the collector as it is and
    # tuned as the CLI tunes it, `rounds` times; medians
    load = _load()
    steady = _concurrency.alternate(counts, steps, rounds, interleave=True, both=True)
    for (agents, tuned), f in sorted(steady.items()):
        name = "loopwright, interleaved" + (", gc tuned" if tuned else "")
        report.raw.setdefault("concurrency", []).append({"name": name, "agents": agents, **f})
        figures[agents, name] = f
        rows.append(_memory_row(agents, f"{name} (median of {f['rounds']})", f))
    loads = [x for f in steady.values() for x in f["loads"] if x is not None]
    report.table(
        f"Concurrency: agents of {steps} steps at once, each run a fresh process; the "
        f"interleaved rows: the counts in turn, {rounds} rounds, medians (load {load} at "
        f"their start, {min(loads, default=0):.1f}-{max(loads, default=0):.1f} at each run's)",
        [
            "agents",
            "configuration",
            "steps/s",
            "steps per CPU s",
            "gc share of CPU",
            "RSS/agent KB",
            "history/agent KB",
            "beyond history KB",
            "errors",
        ],
        rows,
    )
    small, large = min(counts), max(counts)
    for name in ("loopwright", "loopwright, interleaved", "loopwright, interleaved, gc tuned"):
        a, b = figures.get((small, name), {}), figures.get((large, name), {})
        if not a.get("steps_per_s") or not b.get("steps_per_s"):
            report.target(f"{large:,} agents ({name})", "failed", False)
            continue
        beyond = (b["rss_per_agent"] - b["history_per_agent"]) / 1024
        ratio = b["steps_per_s"] / a["steps_per_s"]
        cpu_ratio = b["steps_per_cpu_s"] / a["steps_per_cpu_s"]
        report.target(
            f"{large:,} concurrent agents ({name}): no errors, <= 20 KB RSS/agent beyond "
            f"history, steps/s >= 0.5x {small:,} agents (issue 22)",
            f"{b['errors']} errors, {beyond:.1f} KB, {ratio:.2f}x wall ({cpu_ratio:.2f}x CPU)",
            b["errors"] == 0 and beyond <= 20 and ratio >= 0.5,
        )


def _import_breakdown() -> list[list[str]]:
    """Self time of every module imported by ``import loopwright``, summed by
    top-level package (``pydantic`` includes ``pydantic_core``'s Python part...), then
    loopwright's own slowest modules."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import loopwright; loopwright.run"],
        capture_output=True,
        text=True,
        check=True,
    )
    totals: dict[str, int] = {}
    own: list[tuple[int, str]] = []
    for line in out.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        try:
            self_us = int(parts[0])
        except ValueError:
            continue  # the header line
        name = parts[2].strip()
        if name.startswith("loopwright"):
            own.append((self_us, name))
        top = name.split(".")[0]
        top = "pydantic" if top.startswith("pydantic") else top
        totals[top] = totals.get(top, 0) + self_us
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    rows = [[f"{name} (all modules)", f"{us / 1000:.1f}"] for name, us in ranked[:8]]
    rows += [[name, f"{us / 1000:.1f}"] for us, name in sorted(own, reverse=True)[:8]]
    return rows


def import_times(report: Report, runs: int) -> None:
    figures = import_time.measure_all(runs)
    pyd, lw = figures["import pydantic"], figures["import loopwright"]
    rows = [[name, f"{ms:.1f}"] for name, ms in figures.items()]
    rows.append(["import loopwright beyond pydantic", f"{lw - pyd:.1f}"])
    report.table(f"Start-up (fresh interpreter, median of {runs})", ["what", "ms"], rows)
    report.target(
        "import loopwright at most 100 ms more than import pydantic",
        f"{lw - pyd:+.1f} ms",
        lw - pyd <= 100,
    )
    report.target(
        "loopwright --help under 300 ms",
        f"{figures[import_time.HELP]:.0f} ms",
        figures[import_time.HELP] < 300,
    )
    report.table(
        "What `import loopwright` and its first use spend time on (-X importtime, one run: "
        "self time "
        "summed by top-level package)",
        ["package or module", "self ms"],
        _import_breakdown(),
    )
    report.raw["import"] = figures


def state_changes(report: Report, repeat: int) -> None:
    rows, figures = [], {}
    for name, kind, size in state.CASES:
        f = state.one_case(kind, size, repeat)
        figures[name] = f["us"]
        rows.append([name, f"{f['us']:.1f}", f"{f['patch_bytes']:.0f}"])
    report.table(
        f"State changes: one change + its checkpoint (median of {repeat})",
        ["case", "µs", "patch bytes"],
        rows,
    )
    names = [name for name, _, _ in state.CASES]
    sets, appends = figures[names[1]] / figures[names[0]], figures[names[3]] / figures[names[2]]
    report.target(
        "a store change costs the same within 2x at 1 KB and 10 MB, 1k and 100k items",
        f"{sets:.1f}x (store size), {appends:.1f}x (list length)",
        sets <= 2 and appends <= 2,
    )
    report.raw["state"] = figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and runs")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--steps", type=int, default=50, help="steps of the per-step agent")
    parser.add_argument(
        "--configs",
        default="",
        help="per_step: only these configurations (comma-separated names, e.g. 'native')",
    )
    parser.add_argument(
        "--rounds", type=int, default=0, help="per_step, concurrency: rounds (0: default)"
    )
    parser.add_argument(
        "--agents", type=int, default=10_000, help="concurrency: the large count (against 200)"
    )
    parser.add_argument("--out", default=str(HERE / "results" / "latest.md"))
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")

    report = Report()
    report.line(f"# loopwright benchmark — {datetime.datetime.now():%Y-%m-%d %H:%M}")
    report.line(
        f"commit {_commit()} · Python {platform.python_version()} · {os.cpu_count()} CPUs · "
        f"load average at start {_load()}" + (" · --quick" if args.quick else "")
    )
    if "per_step" in only:
        rounds, warmup = (5, 2) if args.quick else (15, 3)
        names = [n.strip() for n in args.configs.split(",") if n.strip()]
        per_step(report, args.steps, args.rounds or rounds, warmup, names)
    if "growth" in only:
        growth(report, 1010, 1 if args.quick else 3)
    if "flat" in only:
        _flat.report(report, 1000, 50 if args.quick else 100)
    if "model" in only:
        next_to_model.report(report, 4 if args.quick else 10)
    if "concurrency" in only:
        concurrency(report, [200, args.agents], 10, args.rounds or (2 if args.quick else 3))
    if "import" in only:
        import_times(report, 3 if args.quick else 7)
    if "state" in only:
        state_changes(report, 50 if args.quick else 200)
    report.line(f"load average at the end {_load()} (1 / 5 min)")
    report.finish()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.markdown())
    out.with_suffix(".json").write_text(json.dumps(report.raw, indent=1, default=str))
    print(f"\nwritten to {out} (and {out.with_suffix('.json').name})")


if __name__ == "__main__":
    main()
