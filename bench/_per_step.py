"""Per-step overhead: one agent of N steps, every configuration side by side.

Rounds interleave the configurations (in a rotating order) so that load from other
processes falls on all of them alike; each figure is the median over the rounds after
the warm-up ones. Wall time covers the whole ``run()`` call (opening the run, the run
store's writes up to the final flush, closing it), divided by the number of steps.
CPU time is the process's (every thread: the run store's writer too).
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field

from _scenarios import Config, Runner, fresh_db, time_floor

CONFIGS = [
    Config("native"),
    Config("native + run store", store=True),
    Config("native + display", display=True),
    Config("native + run store + display", store=True, display=True),
    Config("react", protocol="react"),
    Config("react + run store", protocol="react", store=True),
    Config("json", protocol="json"),
    Config("json + run store", protocol="json", store=True),
    Config("native, sync tool (thread)", sync_tool=True),
]
FLOOR = "floor (bare asyncio, dicts)"


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def us_per_step(self, steps: int) -> tuple[float, float]:
        return (
            statistics.median(self.wall) / steps * 1e6,
            statistics.median(self.cpu) / steps * 1e6,
        )


async def measure(
    steps: int, rounds: int, warmup: int, configs: list[Config] | None = None
) -> dict[str, tuple[float, float]]:
    """``{name: (wall µs/step, cpu µs/step)}`` for the floor and each configuration."""
    configs = configs if configs is not None else CONFIGS
    folder = tempfile.mkdtemp(prefix="lw-bench-")
    db = fresh_db(folder, "per_step")
    runners = [Runner(c, db) for c in configs]
    samples: dict[str, Samples] = {FLOOR: Samples(), **{c.name: Samples() for c in configs}}
    floor_reps = 20  # a floor run is short: time several per sample
    for r in range(warmup + rounds):
        order = list(range(len(runners) + 1))
        k = r % len(order)
        order = order[k:] + order[:k]
        for i in order:
            if i == len(runners):
                w, c = await time_floor(steps, floor_reps)
                name = FLOOR
            else:
                w, c = await runners[i].time_one(steps)
                name = runners[i].config.name
            if r >= warmup:
                samples[name].wall.append(w)
                samples[name].cpu.append(c)
    return {name: s.us_per_step(steps) for name, s in samples.items()}
