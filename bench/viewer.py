"""The viewer on a small and a huge run: time to the first page and server memory.

A run store with a run of about 10 events and one of about 1,000,000 (a real run of the
scripted model, its events copied with fresh ids and positions until the count is
reached) is served by ``loopwright view``; for each run this measures

- *API first page*: the requests the run page makes (the run, its first 100 events),
  median over rounds;
- *API deep page*: the same for a page in the middle of the run (``after=``), and for an
  event link to an event in the middle (``event=``);
- *first paint* / *deep paint*: headless Chromium (the system's, through Playwright)
  from ``goto`` to the first event row on screen, for the run's first page and a page
  in its middle;
- *server RSS* after all of it, and its peak (the process's high-water mark).

Target: the big run's first page under 1 s, server RSS under 150 MB, at most 2x the small
run's figures.

    python bench/viewer.py [--events 1000000] [--rounds 5] [--db PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

import loopwright as lw


async def _real_run(db: Path, steps: int, name: str) -> str:
    @lw.tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
            b: The second.
        """
        lw.store().set("last", a + b)
        lw.transcript().info(f"added **{a}** and **{b}**")
        return a + b

    outputs: list[lw.ModelOutput | str] = [
        lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}) for i in range(steps - 1)
    ]
    outputs.append(lw.ModelOutput.for_tool_call("submit", {"answer": "done"}))
    model = lw.get_model("mock", outputs=outputs)
    agent = lw.react(tools=[add], max_steps=None)
    state = await lw.run(agent, "Count up.", model=model, db=db, name=name)
    return str(state.run_id)


def make_store(db: Path, events: int) -> dict[str, str]:
    """The small run (3 steps) and the big one (a 200-step run copied up to ``events``)."""
    small = asyncio.run(_real_run(db, 3, "small"))
    seed = asyncio.run(_real_run(db, 200, "big"))
    conn = sqlite3.connect(db)
    n, top = conn.execute(
        "SELECT COUNT(*), MAX(seq) FROM events WHERE run_id = ?", (seed,)
    ).fetchone()
    copies = max(1, events // n)
    # copy k of every event: id and span_id (and a model call's input_base) get "~k"
    conn.execute(
        """
        WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?)
        INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data)
        SELECT run_id, seq + k.n * (? + 1), id || '~' || k.n, sample,
               CASE WHEN span_id IS NULL THEN NULL ELSE span_id || '~' || k.n END,
               type, timestamp,
               json_set(
                 CASE WHEN json_extract(data, '$.input_base') IS NULL THEN data
                      ELSE json_set(data, '$.input_base',
                                    json_extract(data, '$.input_base') || '~' || k.n) END,
                 '$.id', id || '~' || k.n,
                 '$.span_id', CASE WHEN span_id IS NULL THEN NULL
                                   ELSE span_id || '~' || k.n END)
        FROM k, events WHERE run_id = ?
        """,
        (copies - 1, top, seed),
    )
    conn.commit()
    conn.close()
    return {"small": small, "big": seed}


def _viewer(db: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "view", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[2]
    return proc, url


def _median_ms(fn: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def measure(db: Path, runs: dict[str, str], rounds: int) -> dict[str, dict[str, float]]:
    proc, url = _viewer(db)
    base = url.rstrip("/")
    results: dict[str, dict[str, float]] = {}
    try:
        client = httpx.Client(timeout=120)
        for label, run_id in runs.items():
            info = client.get(f"{base}/api/runs/{run_id}").json()
            last = info["last_seq"]
            mid = last // 2
            mid_event = client.get(
                f"{base}/api/runs/{run_id}/events", params={"after": mid, "limit": 1}
            ).json()["events"][0]["id"]

            def first(run_id: str = run_id) -> None:
                client.get(f"{base}/api/runs/{run_id}").raise_for_status()
                client.get(f"{base}/api/runs/{run_id}/events?limit=100").raise_for_status()

            def deep(run_id: str = run_id, mid: int = mid) -> None:
                client.get(f"{base}/api/runs/{run_id}").raise_for_status()
                client.get(f"{base}/api/runs/{run_id}/events?limit=100&after={mid}")

            def link(run_id: str = run_id, ev: str = mid_event) -> None:
                client.get(f"{base}/api/runs/{run_id}/events?limit=100&event={ev}")

            with sqlite3.connect(db) as conn:
                count = conn.execute(
                    "SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,)
                ).fetchone()[0]
            results[label] = {
                "events": count,
                "api first page ms": _median_ms(first, rounds),
                "api deep page ms": _median_ms(deep, rounds),
                "api event link ms": _median_ms(link, rounds),
            }
            results[label].update(_paint(base, run_id, mid, rounds))
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
        peak = _peak_rss_mb(proc.pid)
        for r in results.values():
            r["server RSS MB (after all)"] = rss
            r["server peak RSS MB"] = peak
    finally:
        proc.terminate()
        proc.wait(10)
    return results


def _peak_rss_mb(pid: int) -> float:
    """The process's high-water mark of resident memory (Linux), else NaN."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _paint(base: str, run_id: str, mid: int, rounds: int) -> dict[str, float]:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if chromium is None:
        return {}
    out: dict[str, list[float]] = {"first paint ms": [], "deep paint ms": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for _ in range(rounds):
            for key, suffix in (("first paint ms", ""), ("deep paint ms", f"&after={mid}")):
                page = browser.new_page()
                t = time.perf_counter()
                page.goto(f"{base}/#/run/{run_id}?tab=transcript{suffix}")
                page.wait_for_selector("#events details.ev")
                out[key].append((time.perf_counter() - t) * 1000)
                page.close()
        browser.close()
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", type=Path, help="keep the generated store here (reused)")
    args = parser.parse_args()
    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory()
        args.db = Path(tmp.name) / "viewer.db"
    ids_file = args.db.with_suffix(".ids")
    if args.db.exists() and ids_file.exists():
        small, big = ids_file.read_text().split()
        runs = {"small": small, "big": big}
    else:
        t = time.perf_counter()
        runs = make_store(args.db, args.events)
        ids_file.write_text(f"{runs['small']} {runs['big']}")
        size = os.path.getsize(args.db) / 2**20
        print(f"made the store in {time.perf_counter() - t:.0f} s ({size:.0f} MB)")
    results = measure(args.db, runs, args.rounds)
    keys = list(results["big"])
    print(f"{'':28}{'small run':>14}{'big run':>14}{'big/small':>11}")
    for key in keys:
        s, b = results["small"].get(key, float("nan")), results["big"].get(key, float("nan"))
        ratio = b / s if s else float("nan")
        print(f"{key:28}{s:14,.1f}{b:14,.1f}{ratio:11.2f}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
