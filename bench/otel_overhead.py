"""Per-step overhead of OpenTelemetry tracing (``loopwright.otel``), on and off, side by side.

    python bench/otel_overhead.py [--steps 50] [--rounds 15] [--warmup 3]

The workload of ``_per_step.py`` (a native agent of N steps over the scripted model, a
trivial async tool), in configurations that differ only in tracing: off; instrumented
with no tracer provider configured; traced into the SDK (a ``BatchSpanProcessor``, as a
real setup has, whose exporter drops the spans: the network is not measured); the same
with message contents; and the run store on without and with tracing. Rounds interleave
the configurations in a rotating order; each figure is the median over the rounds after
the warm-up. CPU time is the process's (every thread: the batch processor's and the run
store writer's too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from _scenarios import Config, Runner, fresh_db
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider

import loopwright.otel


class Drop(SpanExporter):
    """Takes the spans and does nothing with them."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


@dataclass(frozen=True)
class Tracing:
    name: str
    store: bool = False
    mode: str = "off"  # off | no provider | sdk | sdk + contents


CONFIGS = [
    Tracing("native, tracing off"),
    Tracing("native, instrumented, no tracer provider", mode="no provider"),
    Tracing("native, traced (SDK, batch processor)", mode="sdk"),
    Tracing("native, traced with contents", mode="sdk + contents"),
    Tracing("native + run store, tracing off", store=True),
    Tracing("native + run store, traced", store=True, mode="sdk"),
]


@contextlib.contextmanager
def tracing(mode: str, provider: TracerProvider) -> Iterator[None]:
    if mode == "off":
        yield
        return
    chosen: Any = NoOpTracerProvider() if mode == "no provider" else provider
    with loopwright.otel.instrument(tracer_provider=chosen, contents=mode == "sdk + contents"):
        yield


async def main(steps: int, rounds: int, warmup: int) -> None:
    db = fresh_db(tempfile.mkdtemp(prefix="lw-bench-otel-"), "otel")
    exporter = Drop()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    runners = {c.name: Runner(Config(c.name, store=c.store), db) for c in CONFIGS}
    cpu: dict[str, list[float]] = {c.name: [] for c in CONFIGS}
    wall: dict[str, list[float]] = {c.name: [] for c in CONFIGS}
    for r in range(warmup + rounds):
        k = r % len(CONFIGS)
        for c in CONFIGS[k:] + CONFIGS[:k]:
            runner = runners[c.name]
            model = runner.model(steps)
            with tracing(c.mode, provider):
                u0, w0 = time.process_time(), time.perf_counter()
                await runner.run(model)
                provider.force_flush()  # the spans' export is part of the cost
                w, u = time.perf_counter() - w0, time.process_time() - u0
            if r >= warmup:
                wall[c.name].append(w / steps * 1e6)
                cpu[c.name].append(u / steps * 1e6)
    base = statistics.median(cpu[CONFIGS[0].name])
    base_store = statistics.median(cpu[CONFIGS[4].name])
    print(f"{steps}-step native agent, median of {rounds} rounds; µs per step")
    print(f"{'configuration':<44} {'wall':>8} {'CPU':>8} {'CPU vs off':>11}")
    for c in CONFIGS:
        med_cpu = statistics.median(cpu[c.name])
        ref = base_store if c.store else base
        print(
            f"{c.name:<44} {statistics.median(wall[c.name]):>8.0f} {med_cpu:>8.0f} "
            f"{med_cpu - ref:>+10.0f}"
        )
    per_run = exporter.count / max(1, (warmup + rounds) * 3)
    print(f"spans exported per traced run: {per_run:.0f}")
    provider.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds, args.warmup))
