"""Growth: the cost of step ~10 against step ~1,000 of one long run, and the run
store's bytes per step.

The trivial tool stamps the time of each call; the time between two consecutive calls
is one whole step (model call, events, tool call). It stamps the process's CPU time
too (every thread: the run store's writer as well), which on a loaded machine is the
steadier figure: wall time also counts the time the process waited for a core. The
figure for "step ~k" is the median over a window of steps around k; each window's
figure is then the median over several runs. (``_flat.py`` measures the same ratio
with the late and early steps taking turns, which a changing load cannot skew.)
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import statistics
import tempfile
from dataclasses import dataclass

import _scenarios
from _scenarios import Config, Runner, fresh_db

WINDOW = 20


@dataclass
class Growth:
    name: str
    early_us: float
    late_us: float
    steps: int
    early_cpu_us: float = 0.0
    late_cpu_us: float = 0.0
    store_bytes_per_step: float | None = None
    payload_bytes_per_step: float | None = None

    @property
    def ratio(self) -> float:
        return self.late_us / self.early_us

    @property
    def cpu_ratio(self) -> float:
        return self.late_cpu_us / self.early_cpu_us if self.early_cpu_us else 0.0


def _window(deltas: list[float], around: int) -> float:
    lo = max(0, around - WINDOW // 2)
    return statistics.median(deltas[lo : lo + WINDOW])


def _file_bytes(path: str) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def _payload_bytes(path: str) -> int:
    conn = sqlite3.connect(path)
    try:
        q = "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM {}"
        return sum(conn.execute(q.format(t)).fetchone()[0] for t in ("events", "messages"))
    finally:
        conn.close()


async def _stamped_run(runner: Runner, steps: int) -> tuple[list[float], list[float]]:
    """The wall and CPU seconds between consecutive tool calls of one run."""
    model = runner.model(steps)
    _scenarios.STAMPS.clear()
    _scenarios.STAMP = True
    try:
        await runner.run(model)
    finally:
        _scenarios.STAMP = False
    pairs = list(itertools.pairwise(_scenarios.STAMPS))
    return [b[0] - a[0] for a, b in pairs], [b[1] - a[1] for a, b in pairs]


async def measure(config: Config, steps: int, runs: int) -> Growth:
    """Per-step cost near step 10 and near step ``steps - 10``; store bytes per step."""
    folder = tempfile.mkdtemp(prefix="lw-bench-")
    early: list[float] = []
    late: list[float] = []
    early_cpu: list[float] = []
    late_cpu: list[float] = []
    per_step: float | None = None
    payload: float | None = None
    for i in range(runs):
        db = fresh_db(folder, f"growth{i}") if config.store else None
        runner = Runner(config, db)
        deltas, cpu = await _stamped_run(runner, steps)
        end = len(deltas) - WINDOW // 2 - 1
        early.append(_window(deltas, 10))
        late.append(_window(deltas, end))
        early_cpu.append(_window(cpu, 10))
        late_cpu.append(_window(cpu, end))
        if db is not None and i == 0:
            # bytes of a long run minus those of a short one: what each step adds
            small = fresh_db(folder, "small")
            await Runner(config, small).run(Runner(config, small).model(11))
            per_step = (_file_bytes(db) - _file_bytes(small)) / (steps - 11)
            payload = (_payload_bytes(db) - _payload_bytes(small)) / (steps - 11)
    return Growth(
        config.name,
        statistics.median(early) * 1e6,
        statistics.median(late) * 1e6,
        steps,
        statistics.median(early_cpu) * 1e6,
        statistics.median(late_cpu) * 1e6,
        per_step,
        payload,
    )
