"""What N live agents hold, by where it was allocated (tracemalloc), per agent.

    python bench/live_memory.py --agents 1000 [--depth 12] [--top 40]

Runs N interleaved agents of 10 steps (each model call yields once, as in
``_concurrency.py --interleave``) and takes a tracemalloc snapshot when every agent is
inside its last tool call (step 9), or with ``--at model`` inside its last model call
(step 10, where ``_concurrency.py``'s interleaved agents all wait), so every agent, its
history and its transcript are alive at once. Prints the total per agent, then the
allocations grouped by the innermost loopwright (or bench) line that made them.
bench/README.md, "Ten thousand agents".
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextvars
import gc
import linecache
import tracemalloc
from typing import Any

import _scenarios
from _scenarios import Config, Runner

import loopwright as lw

STEPS = 10
_calls: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("calls", default=None)


class _Meeting:
    """Holds each agent in its last tool call until all are there, then snapshots."""

    def __init__(self, agents: int) -> None:
        self.agents, self.arrived = agents, 0
        self.open = asyncio.Event()
        self.snapshot: tracemalloc.Snapshot | None = None
        self.traced = 0

    async def gate(self) -> None:
        """The tool's gate: the agent's last tool call waits here."""
        calls = _calls.get()
        if calls is None:
            return
        calls[0] += 1
        if calls[0] == STEPS - 1:
            await self.arrive()

    async def arrive(self) -> None:
        """Wait here until every agent has arrived; the last one takes the snapshot."""
        self.arrived += 1
        if self.arrived == self.agents:
            gc.collect()
            self.snapshot = tracemalloc.take_snapshot()
            self.traced = tracemalloc.get_traced_memory()[0]
            self.open.set()
        await self.open.wait()


def _model(meeting: _Meeting | None = None) -> lw.Model:
    """The scripted model; given ``meeting``, its last call waits there (with as many
    connections as agents: one waiting in its call holds its connection)."""
    script = _scenarios.script(STEPS, "native")
    outputs = iter(script)

    async def answer(*_: Any) -> lw.ModelOutput | str:
        await asyncio.sleep(0)
        output = next(outputs)
        if meeting is not None and output is script[-1]:
            await meeting.arrive()
        return output

    if meeting is None:
        return lw.get_model("mock", outputs=answer)
    config = lw.GenerateConfig(max_connections=meeting.agents)
    return lw.get_model("mock", outputs=answer, config=config)


async def main(agents: int, depth: int, top: int, at: str) -> None:
    runner = Runner(Config("live memory"), None)
    await runner.run(_model())  # warm up
    meeting = _Meeting(agents)
    if at == "tool":
        _scenarios.GATE = meeting.gate

    async def one(model: lw.Model) -> lw.AgentState:
        _calls.set([0])
        return await runner.run(model)

    models = [_model(meeting if at == "model" else None) for _ in range(agents)]
    gc.collect()
    tracemalloc.start(depth)
    base = tracemalloc.take_snapshot()
    before = tracemalloc.get_traced_memory()[0]
    await asyncio.gather(*(one(m) for m in models))
    assert meeting.snapshot is not None
    per_agent = (meeting.traced - before) / agents / 1024
    print(f"{per_agent:.1f} KB per live agent (history included), in its last {at} call")
    by_line: collections.Counter[str] = collections.Counter()
    for stat in meeting.snapshot.compare_to(base, "traceback"):
        if stat.size_diff <= 0:
            continue
        where = "elsewhere"
        for frame in reversed(stat.traceback):  # the innermost frame is the last
            if "loopwright/" in frame.filename or "bench/" in frame.filename:
                code = linecache.getline(frame.filename, frame.lineno).strip()[:60]
                name = frame.filename.rsplit("src/", 1)[-1].rsplit("/bench/", 1)[-1]
                where = f"{name}:{frame.lineno} {code}"
                break
        by_line[where] += stat.size_diff
    for where, size in by_line.most_common(top):
        print(f"{size / agents:8.0f} B  {where}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=12, help="frames kept per allocation")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument(
        "--at", choices=["tool", "model"], default="tool", help="the last call to snapshot in"
    )
    args = parser.parse_args()
    asyncio.run(main(args.agents, args.depth, args.top, args.at))
