"""Streaming: how long a token takes to reach the consumer, and what a streamed step costs.

    python bench/streaming.py            # the full run (about a minute)
    python bench/streaming.py --quick

Two tables, printed side by side with their reference (see ``bench/README.md``):

- token latency: an SSE server on 127.0.0.1 (``tests/model/providers/sse_server.py``)
  streams a long reply of OpenAI chunks, one every ``--interval`` ms, each carrying the
  ``perf_counter_ns`` at which it was written; the consumer notes the time each piece
  reaches it. Reference: the same stream read with the ``openai`` SDK alone
  (``AsyncStream`` of chunks, no loopwright). Measured: ``Model.generate`` streaming to a
  sink, and ``lw.run_stream`` (the run's buffer, events and all).
- per-step overhead: an agent of N steps with the scripted ``mock`` model and an async
  ``add`` tool, ``lw.run`` against ``lw.run_stream`` consumed to the end (``db=False``),
  median over rounds, interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "src"))

from tests.model.providers.sse_server import (  # noqa: E402
    OPENAI_DONE,
    SSEServer,
    Stream,
    openai_delta,
    openai_usage,
    stamp,
)

import loopwright as lw  # noqa: E402
from loopwright.model._stream import stream_to  # noqa: E402


def _stream(tokens: int, interval_ms: float) -> Stream:
    events: list[Any] = [openai_delta(role="assistant", content="")]
    events += [stamp] * tokens
    events += [openai_delta(finish="stop"), openai_usage(), OPENAI_DONE]
    return Stream(events, interval=interval_ms / 1000)


def _latencies(text: str, now: int, into: list[float]) -> None:
    for word in text.split():
        into.append((now - int(word)) / 1000)  # µs


async def sdk_alone(sse: SSEServer) -> list[float]:
    import openai

    client = openai.AsyncOpenAI(base_url=sse.url + "/v1", api_key="k", max_retries=0)
    out: list[float] = []
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], stream=True
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            _latencies(chunk.choices[0].delta.content, time.perf_counter_ns(), out)
    await client.close()
    return out


async def model_sink(sse: SSEServer) -> list[float]:
    model = lw.get_model("openai/m", base_url=sse.url + "/v1", api_key="k")
    out: list[float] = []

    def sink(delta: Any) -> None:
        _latencies(delta.text, time.perf_counter_ns(), out)

    with stream_to(sink):
        await model.generate([lw.UserMessage(content="go")])
    await model.aclose()
    return out


async def run_stream(sse: SSEServer) -> list[float]:
    model = lw.get_model("openai/m", base_url=sse.url + "/v1", api_key="k")
    out: list[float] = []
    agent = lw.react(submit=False)
    async with lw.run_stream(agent, "go", model=model, db=False) as events:
        async for event in events:
            if isinstance(event, lw.TextDelta):
                _latencies(event.text, time.perf_counter_ns(), out)
    await model.aclose()
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(tokens: int, interval_ms: float, rounds: int) -> None:
    ways = {
        "openai SDK alone (reference)": sdk_alone,
        "Model.generate -> sink": model_sink,
        "lw.run_stream -> consumer": run_stream,
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    with SSEServer() as sse:
        for r in range(rounds):
            names = list(ways)
            names = names[r % len(names) :] + names[: r % len(names)]
            for name in names:
                sse.push(_stream(tokens, interval_ms))
                got = await ways[name](sse)
                assert len(got) == tokens, (name, len(got))
                samples[name] += got
    print(f"\n## Token latency ({tokens} tokens x {rounds} rounds, one every {interval_ms} ms)\n")
    print("| path | median µs | p99 µs | median beyond the SDK µs |")
    print("|---|---:|---:|---:|")
    base = statistics.median(samples["openai SDK alone (reference)"])
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.0f} | {_pct(values, 0.99):.0f} | {median - base:+.0f} |")


@lw.tool
async def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: One.
        b: Two.
    """
    return a + b


def _script(steps: int) -> lw.Model:
    call = lw.ModelOutput.for_tool_call
    outputs: list[Any] = [call("add", {"a": i, "b": 1}) for i in range(steps - 1)]
    outputs.append(call("submit", {"answer": "done"}))
    return lw.get_model("mock", outputs=outputs)


async def _plain(steps: int) -> None:
    await lw.run(lw.react(tools=[add], max_steps=None), "go", model=_script(steps), db=False)


async def _streamed(steps: int) -> None:
    agent = lw.react(tools=[add], max_steps=None)
    async with lw.run_stream(agent, "go", model=_script(steps), db=False) as events:
        async for _ in events:
            pass


async def per_step(steps: int, rounds: int) -> None:
    ways = {"lw.run": _plain, "lw.run_stream (consumed)": _streamed}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(rounds + 2):
        for name in list(ways)[r % 2 :] + list(ways)[: r % 2]:
            w, c = time.perf_counter(), time.process_time()
            await ways[name](steps)
            if r >= 2:  # two warm-up rounds
                wall[name].append((time.perf_counter() - w) / steps * 1e6)
                cpu[name].append((time.process_time() - c) / steps * 1e6)
    print(f"\n## Per-step overhead ({steps}-step agent, mock model, median of {rounds})\n")
    print("| run | wall µs/step | CPU µs/step |")
    print("|---|---:|---:|")
    for name in ways:
        print(
            f"| {name} | {statistics.median(wall[name]):.0f} | {statistics.median(cpu[name]):.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--interval", type=float, default=1.0, help="ms between tokens")
    args = parser.parse_args()
    tokens, rounds = (500, 2) if args.quick else (2000, 3)
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} / {five:.1f}")
    asyncio.run(latency(tokens, args.interval, rounds))
    asyncio.run(per_step(50, 5 if args.quick else 15))


if __name__ == "__main__":
    main()
