"""Where the run store's share of a 50-step run goes (issue 22's last target).

    python bench/store_share.py              # 40 rounds of 50-step runs
    python bench/store_share.py --rounds 60 --steps 50

In one process, in turn each round (medians over the rounds after 5 of warm-up), the
bench's scripted agent (``_scenarios.py``) run:

- ``off``: no run store;
- ``on``: the run store as it is;
- ``on, writer does nothing``: the rows put on the writer's queue as always, the
  writer answering the flushes but serialising and writing nothing (what the run's own
  thread, the open, the versions and the flush's two thread switches cost: the floor
  of this design);
- ``on, events by msgspec``: only if ``msgspec`` is importable (it is no dependency):
  the event rows serialised by msgspec instead of pydantic (not the same rows in every
  case: an experiment on how much a faster serializer could win, nothing more).

For each stored configuration it prints the writer's ``_write`` time per run, and for
``on`` its parts: serialising (the rows' dumps), SQLite (every statement and the
commit, timed through a thin proxy of the connection) and the rest (the loop over the
batch). A row of the writer's work in series with the run: the run waits for it at its
final flush.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from _scenarios import Config, Runner, fresh_db

import loopwright.log._file_thread as ft

_write = ft._FileWriter._write
_dump_event, _dump_message = ft.dump_event, ft.dump_message
_connect = ft.connect

WRITE: dict[str, list[float]] = defaultdict(list)  # _write seconds per run, by mode
PARTS: dict[str, float] = defaultdict(float)  # the "on" mode's parts, summed
MODE = ["on"]
BATCHES = [0.0]  # _write seconds of the run in progress (its batches, summed)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if MODE[0] == "on":
                PARTS[name] += time.perf_counter() - start

    return call


class _Conn:
    """The writer's connection, its statements timed (7-8 calls a batch)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.execute = _timed("sqlite", conn.execute)
        self.executemany = _timed("sqlite", conn.executemany)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def _writer(self: Any, conn: Any, batch: list[Any], wakes: list[Any]) -> bool:
    start = time.perf_counter()
    try:
        if MODE[0] == "on, writer does nothing":
            wakes.extend(item[2] for item in batch if item[1] == "flush")
            return any(item[1] == "stop" for item in batch)
        return _write(self, conn, batch, wakes)
    finally:
        BATCHES[0] += time.perf_counter() - start


def _msgspec_dump() -> Callable[..., str] | None:
    try:
        import msgspec
    except ImportError:
        return None
    from pydantic import BaseModel

    from loopwright.model import AssistantMessage, ToolMessage

    def hook(value: Any) -> Any:
        if isinstance(value, (AssistantMessage, ToolMessage)):
            return {"$ref": value.id}
        if isinstance(value, BaseModel):
            return {k: v for k, v in value.__dict__.items() if v is not None}
        raise TypeError(type(value).__name__)

    encoder = msgspec.json.Encoder(enc_hook=hook)

    def dump(event: Any, tools: str | None = None) -> str:
        if tools is None:
            return encoder.encode(event).decode()
        row = encoder.encode(dataclasses.replace(event, tools=[]))
        return (b'%s,"tools":{"$ref":"%s"}}' % (row[:-1], tools.encode())).decode()

    return dump


async def measure(steps: int, rounds: int) -> None:
    ft._FileWriter._write = _writer
    ft.dump_event = _timed("serialise", _dump_event)
    ft.dump_message = _timed("serialise", _dump_message)
    ft.connect = lambda path: _Conn(_connect(path))
    fast = _msgspec_dump()
    modes = ["on", "on, writer does nothing"] + (["on, events by msgspec"] if fast else [])
    db = fresh_db(tempfile.mkdtemp(prefix="lw-share-"), "share")
    on = Runner(Config("native + run store", store=True), db)
    off = Runner(Config("native"), None)
    walls: dict[str, list[float]] = defaultdict(list)
    warmup = 5
    timed_dump = ft.dump_event
    everything = ["off", *modes]
    for r in range(warmup + rounds):
        k = r % len(everything)  # a rotating order: the machine's swings fall on all alike
        for mode in everything[k:] + everything[:k]:
            MODE[0] = mode
            ft.dump_event = fast if fast and mode == "on, events by msgspec" else timed_dump
            BATCHES[0] = 0.0
            wall, _ = await (off if mode == "off" else on).time_one(steps)
            if r >= warmup:  # (the run's rows are all written: it waited for its flush)
                walls[mode].append(wall)
                if mode != "off":
                    WRITE[mode].append(BATCHES[0])
        if r == warmup - 1:
            PARTS.clear()
    med = statistics.median
    base = med(walls["off"])
    print(f"{steps}-step runs, {rounds} rounds, medians (µs)")
    print(f"{'configuration':<28}{'per step':>10}{'ratio':>8}{'writer per run':>16}")
    for mode in ["off", *modes]:
        w = med(walls[mode])
        writer = f"{med(WRITE[mode]) * 1e6:,.0f}" if WRITE[mode] else "-"
        print(f"{mode:<28}{w / steps * 1e6:>10.0f}{w / base:>8.3f}{writer:>16}")
    runs = len(WRITE["on"])
    total = sum(WRITE["on"])
    print(
        "the writer's work per run, 'on': "
        f"serialising {PARTS['serialise'] / runs * 1e6:,.0f}, "
        f"SQLite {PARTS['sqlite'] / runs * 1e6:,.0f}, "
        f"the rest {(total - PARTS['serialise'] - PARTS['sqlite']) / runs * 1e6:,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(measure(args.steps, args.rounds))


if __name__ == "__main__":
    main()
