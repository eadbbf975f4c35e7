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

from _scenarios import Config, Runner, fresh_db, time_floor, time_typed_floor

CONFIGS = [
    Config("native"),
    Config("native without transcript", transcript=False),
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
TYPED_FLOOR = "typed floor (bare asyncio, loopwright's message types)"
FLOORS = {FLOOR: time_floor, TYPED_FLOOR: time_typed_floor}


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    wall1: list[float] = field(default_factory=list)
    cpu1: list[float] = field(default_factory=list)


@dataclass
class Figures:
    """One configuration's figures (microseconds unless said otherwise)."""

    wall: float
    """Wall time of the whole run divided by its steps."""
    cpu: float
    """CPU time (all threads) of the whole run divided by its steps."""
    marginal_wall: float
    """What a step adds: (run of N steps - run of 1 step) / (N - 1), wall."""
    marginal_cpu: float
    """The same in CPU time."""
    one_step_ms: float
    """Wall milliseconds of a run of one step: opening and closing the run dominate."""

    @classmethod
    def of(cls, s: Samples, steps: int) -> Figures:
        med = statistics.median
        return cls(
            wall=med(s.wall) / steps * 1e6,
            cpu=med(s.cpu) / steps * 1e6,
            marginal_wall=(med(s.wall) - med(s.wall1)) / (steps - 1) * 1e6,
            marginal_cpu=(med(s.cpu) - med(s.cpu1)) / (steps - 1) * 1e6,
            one_step_ms=med(s.wall1) * 1e3,
        )


async def measure(
    steps: int, rounds: int, warmup: int, configs: list[Config] | None = None
) -> dict[str, Figures]:
    """The figures of the floor and of each configuration, by name."""
    configs = configs if configs is not None else CONFIGS
    folder = tempfile.mkdtemp(prefix="lw-bench-")
    db = fresh_db(folder, "per_step")
    runners = [Runner(c, db) for c in configs]
    samples: dict[str, Samples] = {
        **{name: Samples() for name in FLOORS},
        **{c.name: Samples() for c in configs},
    }
    floors = list(FLOORS.items())
    floor_reps = 20  # a floor run is short: time several per sample
    for r in range(warmup + rounds):
        order = list(range(len(runners) + len(floors)))
        k = r % len(order)
        order = order[k:] + order[:k]
        for i in order:
            if i >= len(runners):
                name, time_it = floors[i - len(runners)]
                w, c = await time_it(steps, floor_reps)
                w1, c1 = await time_it(1, floor_reps)
            else:
                w, c = await runners[i].time_one(steps)
                w1, c1 = await runners[i].time_one(1)
                name = runners[i].config.name
            if r >= warmup:
                s = samples[name]
                s.wall.append(w)
                s.cpu.append(c)
                s.wall1.append(w1)
                s.cpu1.append(c1)
    return {name: Figures.of(s, steps) for name, s in samples.items()}
