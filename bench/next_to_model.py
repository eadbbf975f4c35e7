"""Next to a real model: a 50-step agent through ``openai/...`` against a bare loop on
the official SDK, both calling the same local OpenAI-compatible server.

    python bench/next_to_model.py                 # 2 ms and 20 ms servers
    python bench/next_to_model.py --delays 2 --rounds 5

The server (``_openai_server.py``, its own process) answers each request after the
delay with the next tool call of a 50-step agent. Per round, interleaved in a rotating
order: the bare loop (``openai.AsyncOpenAI``, one client, dict messages, the tool called
directly; once through ``chat.completions.create``, once posting the body as it is, the
way loopwright's provider does), loopwright with the run store off and with it on
(``lw.run``, the model made once, as a program that makes many runs would). Figures:
median wall and CPU (this process, every thread) per step; the ratios are loopwright's
wall time per step over each bare loop's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import Report  # noqa: E402

import loopwright as lw  # noqa: E402

STEPS = 50
BARE = "bare loop, official SDK"
BARE_POST = "bare loop, SDK's post (no transform)"
TASK = "Add the numbers, then submit."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Submit the answer.",
            "parameters": {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            },
        },
    },
]


@lw.tool
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


class Server:
    """``_openai_server.py`` in a process of its own."""

    def __init__(self, delay_ms: float) -> None:
        cmd = [sys.executable, str(HERE / "_openai_server.py"), "--delay-ms", str(delay_ms)]
        cmd += ["--steps", str(STEPS)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "port":
            self.proc.kill()
            raise RuntimeError("the bench server did not start")
        self.url = f"http://127.0.0.1:{line[1]}/v1"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def bare_loop(client: Any, raw: bool = False) -> int:
    """The agent loop a user writes on the SDK alone: call, run the tool, append.

    ``raw``: the request is posted as it is (``client.post(..., cast_to=ChatCompletion)``,
    what loopwright's provider does) instead of through ``chat.completions.create``,
    which first walks every message through the SDK's type transform."""
    from openai.types.chat import ChatCompletion

    async def add_fn(a: int, b: int) -> int:
        return a + b

    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    calls = 0
    while True:
        if raw:
            body = {"model": "bench", "messages": messages, "tools": TOOLS}
            response = await client.post("/chat/completions", cast_to=ChatCompletion, body=body)
        else:
            response = await client.chat.completions.create(
                model="bench", messages=messages, tools=TOOLS
            )
        calls += 1
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            if call.function.name == "submit":
                return calls
            args = json.loads(call.function.arguments)
            result = await add_fn(**args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


async def _timed(fn: Callable[[], Awaitable[int]], into: Samples | None) -> None:
    cpu, start = time.process_time(), time.perf_counter()
    steps = await fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if steps != STEPS:
        raise RuntimeError(f"the agent took {steps} steps, not {STEPS}")
    if into is not None:
        into.wall.append(wall / steps * 1e6)
        into.cpu.append(cpu / steps * 1e6)


async def measure(url: str, rounds: int, warmup: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) µs per step of each way, by name."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="k")
    model = lw.get_model("openai/bench", base_url=url, api_key="k")
    agent = lw.react(tools=[add], max_steps=None)
    db = os.path.join(tempfile.mkdtemp(prefix="lw-bench-"), "runs.db")

    async def loopwright(store: str | bool) -> int:
        state = await lw.run(agent, TASK, model=model, db=store)  # type: ignore[arg-type]
        if state.completed != "submit":
            raise RuntimeError(f"the agent ended with {state.completed!r}")
        return sum(1 for m in state.messages if m.role == "assistant")

    ways: dict[str, Callable[[], Awaitable[int]]] = {
        BARE: lambda: bare_loop(client),
        BARE_POST: lambda: bare_loop(client, raw=True),
        "loopwright, run store off": lambda: loopwright(False),
        "loopwright, run store on": lambda: loopwright(db),
    }
    samples = {name: Samples() for name in ways}
    names = list(ways)
    for r in range(warmup + rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            await _timed(ways[name], samples[name] if r >= warmup else None)
    await client.close()
    med = statistics.median
    return {name: (med(s.wall), med(s.cpu)) for name, s in samples.items()}


def run_all(delays: list[float], rounds: int, warmup: int) -> dict[float, dict[str, Any]]:
    out: dict[float, dict[str, Any]] = {}
    for delay in delays:
        server = Server(delay)
        try:
            out[delay] = asyncio.run(measure(server.url, rounds, warmup))
        finally:
            server.close()
    return out


def report(out: Report, rounds: int) -> None:
    """The "next to a model" section of ``run.py``: the table and the target."""
    rows = []
    worst = 0.0
    for delay, figures in run_all([2, 20], rounds, 2).items():
        bare = figures[BARE][0]
        post = figures[BARE_POST][0]
        for name, (wall, cpu) in figures.items():
            rows.append(
                [
                    f"{delay:g} ms",
                    name,
                    f"{wall:,.0f}",
                    f"{cpu:,.0f}",
                    f"{wall / bare:.3f}",
                    f"{wall / post:.3f}",
                ]
            )
            if name.startswith("loopwright"):
                worst = max(worst, wall / bare)
        out.raw.setdefault("model", {})[str(delay)] = figures
    out.table(
        f"Next to a model: a local OpenAI-compatible server answering after 2 / 20 ms, "
        f"{STEPS}-step agents, µs per step (medians of {rounds} rounds)",
        ["server", "loop", "wall", "CPU", "wall / bare SDK loop", "wall / bare SDK post"],
        rows,
    )
    out.target(
        "through openai/... at most 5% more wall per step than a bare loop on the SDK",
        f"{worst:.3f}x at worst",
        worst <= 1.05,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delays", default="2,20", help="server delays, ms (comma-separated)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f}; {STEPS}-step agents, µs per step (medians)")
    for delay, figures in run_all(delays, args.rounds, args.warmup).items():
        bare, raw = figures[BARE][0], figures[BARE_POST][0]
        print(f"\nserver answers after {delay:g} ms")
        for name, (wall, cpu) in figures.items():
            print(
                f"  {name:38s} wall {wall:9.1f}  CPU {cpu:8.1f}  wall / bare {wall / bare:.3f}"
                f"  wall / bare post {wall / raw:.3f}"
            )


if __name__ == "__main__":
    main()
