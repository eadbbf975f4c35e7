"""Flat steps: the cost of step ~1,000 against step ~10, measured side by side.

On a shared machine the load changes from second to second, so a long run's late steps
and its early ones, measured a second apart, are not comparable. Here two agents take
turns instead: a long one, brought to step ~1,000 first, and fresh short ones. Each
step of one is followed by a step of the other (a gate in the tool holds the agent that
is not stepping), so load falls on both alike; the figure for each is the median of its
steps' wall and CPU times, and the ratio is late / early.

A step is measured from the moment its agent passes the gate (the tool call of the
previous step is about to return) to its next tool call: the tool's result, the events,
the model call (render, parse), the run store's writes queued.
"""

from __future__ import annotations

import asyncio
import contextvars
import statistics
import tempfile
import time
from dataclasses import dataclass

import _scenarios
from _report import Report
from _scenarios import Config, Runner, fresh_db

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="")


@dataclass
class Flat:
    name: str
    early_wall: float
    late_wall: float
    early_cpu: float
    late_cpu: float

    @property
    def ratio(self) -> float:
        return self.late_wall / self.early_wall

    @property
    def cpu_ratio(self) -> float:
        return self.late_cpu / self.early_cpu


class Gates:
    """One agent steps at a time: the tool waits at its gate until the driver opens it."""

    def __init__(self) -> None:
        self.go: dict[str, asyncio.Event] = {}
        self.arrived: dict[str, asyncio.Event] = {}
        self.started: dict[str, tuple[float, float]] = {}
        self.steps: dict[str, list[tuple[float, float]]] = {}

    async def tool_call(self) -> None:
        who = WHO.get()
        now = time.perf_counter(), time.process_time()
        if who in self.started:
            a = self.started.pop(who)
            self.steps.setdefault(who, []).append((now[0] - a[0], now[1] - a[1]))
        self.arrived[who].set()
        await self.go[who].wait()
        self.go[who].clear()
        self.started[who] = time.perf_counter(), time.process_time()

    async def step(self, who: str, task: asyncio.Task[object]) -> bool:
        """Let ``who`` take one step; False when its run ended instead."""
        self.arrived[who].clear()
        self.go[who].set()
        arrived = asyncio.ensure_future(self.arrived[who].wait())
        await asyncio.wait([arrived, task], return_when=asyncio.FIRST_COMPLETED)
        if not arrived.done():
            arrived.cancel()
            return False
        return True

    def start(self, who: str, runner: Runner, steps: int) -> asyncio.Task[object]:
        self.go[who], self.arrived[who] = asyncio.Event(), asyncio.Event()
        self.steps.pop(who, None)
        self.started.pop(who, None)
        token = WHO.set(who)
        try:
            return asyncio.ensure_future(runner.run(runner.model(steps)))
        finally:
            WHO.reset(token)


async def measure(config: Config, late_at: int = 1000, window: int = 100) -> Flat:
    """Steps ``late_at`` to ``late_at + window`` of one run, each followed by a step of
    a fresh run between its steps 5 and 25."""
    folder = tempfile.mkdtemp(prefix="lw-bench-")
    db = fresh_db(folder, "flat") if config.store else None
    gates = Gates()
    _scenarios.GATE = gates.tool_call
    try:
        long_runner, short_runner = Runner(config, db), Runner(config, db)
        long_run = gates.start("long", long_runner, late_at + window + 2)
        while len(gates.steps.get("long", ())) < late_at:
            await gates.step("long", long_run)
        gates.steps["long"] = []
        early: list[tuple[float, float]] = []
        short_run = None
        while len(gates.steps["long"]) < window:
            if short_run is None or len(gates.steps.get("short", ())) >= 25:
                if short_run is not None:
                    early += gates.steps["short"][5:]
                    while await gates.step("short", short_run):
                        pass
                    await short_run
                short_run = gates.start("short", short_runner, 30)
                await gates.step("short", short_run)  # to its first tool call
            await gates.step("short", short_run)
            await gates.step("long", long_run)
        while await gates.step("long", long_run):
            pass
        await long_run
        if short_run is not None:
            while await gates.step("short", short_run):
                pass
            await short_run
        late = gates.steps["long"][:window]
    finally:
        _scenarios.GATE = None
    med = statistics.median
    return Flat(
        config.name,
        med(s[0] for s in early) * 1e6,
        med(s[0] for s in late) * 1e6,
        med(s[1] for s in early) * 1e6,
        med(s[1] for s in late) * 1e6,
    )


def render_cost(protocol: str, late_at: int = 1000, window: int = 100) -> tuple[float, float]:
    """Median µs of one text protocol's ``render`` alone at steps 5-25 of fresh
    conversations and at steps ``late_at``.. of a long one, taking turns (one tool call
    and its result per step)."""
    import loopwright as lw
    from loopwright.model.protocols import resolve_tool_protocol

    proto = resolve_tool_protocol(protocol)
    tools, config = [_scenarios.add.info], lw.GenerateConfig()

    def step(messages: list[lw.ChatMessage], i: int) -> float:
        call = lw.ToolCall(function="add", arguments={"a": i, "b": 1})
        messages.append(lw.AssistantMessage(reasoning="add.", tool_calls=[call]))
        messages.append(lw.ToolMessage(tool_call_id=call.id, function="add", content=str(i + 1)))
        start = time.perf_counter()
        proto.render(messages, tools, config)
        return time.perf_counter() - start

    long: list[lw.ChatMessage] = [lw.UserMessage(content="Add the numbers.")]
    for i in range(late_at):
        step(long, i)
    early: list[float] = []
    late: list[float] = []
    short: list[lw.ChatMessage] = []
    for i in range(window):
        if i % 20 == 0:
            short = [lw.UserMessage(content="Add the numbers.")]
            for j in range(5):
                step(short, j)
        early.append(step(short, i))
        late.append(step(long, late_at + i))
    return statistics.median(early) * 1e6, statistics.median(late) * 1e6


FLAT_CONFIGS = [
    Config("native + run store", store=True),
    Config("react + run store", protocol="react", store=True),
    Config("json + run store", protocol="json", store=True),
]


def report(out: Report, late_at: int, window: int) -> None:
    """The flat-steps section of ``run.py``: the table, the render table, the target."""
    rows, ratios = [], []
    for config in FLAT_CONFIGS:
        f = asyncio.run(measure(config, late_at, window))
        ratios.append((f.name, f.ratio, f.cpu_ratio))
        rows.append(
            [
                f.name,
                f"{f.early_wall:.1f}",
                f"{f.late_wall:.1f}",
                f"{f.ratio:.2f}",
                f"{f.early_cpu:.1f}",
                f"{f.late_cpu:.1f}",
                f"{f.cpu_ratio:.2f}",
            ]
        )
        out.raw.setdefault("flat", {})[f.name] = {**f.__dict__, "ratio": f.ratio}
    late = f"step ~{late_at}"
    out.table(
        f"Flat steps: a run's steps {late_at}-{late_at + window} taking turns with steps "
        "5-25 of fresh runs (µs per step, medians)",
        [
            "configuration",
            "wall step ~10",
            f"wall {late}",
            "ratio",
            "CPU step ~10",
            f"CPU {late}",
            "CPU ratio",
        ],
        rows,
    )
    render_rows = []
    for protocol in ("react", "json"):
        early, late_us = render_cost(protocol, late_at)
        render_rows.append([protocol, f"{early:.1f}", f"{late_us:.1f}", f"{late_us / early:.2f}"])
    out.table(
        "A text protocol's render alone, a long and fresh conversations taking turns "
        "(µs, median of 100 requests)",
        ["protocol", "step ~10", late, "ratio"],
        render_rows,
    )
    out.target(
        "flat steps: step 1,000 within 1.3x of step 10, run store on (issue 22)",
        ", ".join(f"{n}: {w:.2f}x" for n, w, _ in ratios),
        all(w <= 1.3 for _, w, _ in ratios),
    )
