"""CPU per step of a traced run as its conversation grows, contents off and on.

    python bench/otel_growth.py [--steps 2000 8000 16000]

A ``react`` agent of N steps over the scripted model (a trivial async tool each step,
no run store), traced with ``loopwright.otel.instrument()`` into the SDK with a
``SimpleSpanProcessor`` whose exporter drops the spans; with contents, every ``chat``
span holds the newest input messages that fit in 16,000 characters. The figure is the
process's CPU time over the run divided by N: flat as N grows when a step costs its
own work, growing with N when a step's cost grows with the conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import loopwright as lw
import loopwright.otel


class Drop(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@lw.tool
async def noop(i: int) -> int:
    """Return the number.

    Args:
        i: Any number.
    """
    return i


async def cpu_per_step(steps: int, contents: bool) -> float:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    outputs = [lw.ModelOutput.for_tool_call("noop", {"i": i}) for i in range(steps - 1)]
    outputs.append(lw.ModelOutput.for_tool_call("submit", {"answer": "done"}))
    agent = lw.react(tools=[noop], max_steps=steps)
    with loopwright.otel.instrument(tracer_provider=provider, contents=contents):
        start = time.process_time()
        await lw.run(agent, "go", model=lw.get_model("mock", outputs=outputs), db=False)
        return (time.process_time() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[2000, 8000, 16000])
    args = parser.parse_args()
    print("| steps | CPU ms/step, contents off | CPU ms/step, contents on |")
    print("|---:|---:|---:|")
    for n in args.steps:
        off = asyncio.run(cpu_per_step(n, False))
        on = asyncio.run(cpu_per_step(n, True))
        print(f"| {n:,} | {off * 1e3:.2f} | {on * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
