"""Concurrency: N agents of S steps at once, in this (fresh) process; prints JSON.

    python bench/_concurrency.py --agents 2000 --steps 10 [--store DB] [--floor]

``--interleave``: each model call yields to the event loop once before it answers, as a
call over the network does. Without it the scripted model never yields, so each agent
runs its steps back to back and only the finished agents' states are alive at once;
interleaved, every agent (its transcript, its run) is alive at the same time.

``--gc-tuned`` freezes the objects alive before the agents start (``gc.freeze()``) and
raises the collector's thresholds: with thousands of live agents, full collections
traverse every agent's objects again and again.

RSS is measured against the process after imports and one warm-up agent: the peak
(sampled every 5 ms by a thread, and once more at the end while every agent's final
state is still held) minus that baseline, per agent. The history itself (the messages an
agent ends with, as Python objects) is measured with tracemalloc on a copy of one
agent's messages, so that the RSS *beyond* the history can be reported.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import resource
import sys
import threading
import time
import tracemalloc
from typing import Any

import _scenarios
import psutil
from _scenarios import Config, Runner

import loopwright as lw


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _history_bytes(messages: list[Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        copied = copy.deepcopy(messages)  # strings are shared, as in the original
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del copied
    return size


class _Sampler:
    """Samples RSS and the thread count from a thread while the agents run."""

    def __init__(self) -> None:
        self.peak_rss = _rss()
        self.peak_threads = threading.active_count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.sample()

    def sample(self) -> None:
        self.peak_rss = max(self.peak_rss, _rss())
        self.peak_threads = max(self.peak_threads, threading.active_count() - 1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # the finished agents' states are still held


def _interleaved_model(steps: int) -> lw.Model:
    """The scripted model, but each call yields to the event loop once before it
    answers, as a call over the network does: the agents then run interleaved, every
    one of them alive at once, instead of each running its steps to the end in turn."""
    outputs = iter(_scenarios.script(steps, "native"))

    async def answer(*_: Any) -> lw.ModelOutput | str:
        await asyncio.sleep(0)
        return next(outputs)

    return lw.get_model("mock", outputs=answer)


async def main(
    agents: int,
    steps: int,
    store: str | None,
    floor: bool,
    gc_tuned: bool,
    interleave: bool = False,
) -> dict[str, Any]:
    if floor:
        await _scenarios.floor_agent(_scenarios.floor_script(steps), "warm up")
        scripts = [_scenarios.floor_script(steps) for _ in range(agents)]
        gc.collect()
        base, start = _rss(), time.perf_counter()
        sampler = _Sampler()
        tasks = [_scenarios.floor_agent(s, "Add the numbers.") for s in scripts]
        results: list[Any] = await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.perf_counter() - start
        sampler.stop()
        errors = [r for r in results if isinstance(r, BaseException)]
        history = _history_bytes(results[0]) if not errors else 0
    else:
        runner = Runner(Config("concurrency", store=store is not None), store)
        make = _interleaved_model if interleave else runner.model
        await runner.run(make(steps))
        models = [make(steps) for _ in range(agents)]
        gc.collect()
        if gc_tuned:  # what an application running thousands of agents may choose to do
            gc.freeze()
            gc.set_threshold(50_000, 50, 100)
        base, start = _rss(), time.perf_counter()
        sampler = _Sampler()
        results = await asyncio.gather(*(runner.run(m) for m in models), return_exceptions=True)
        elapsed = time.perf_counter() - start
        sampler.stop()
        errors = [r for r in results if isinstance(r, BaseException)]
        ok = [r for r in results if not isinstance(r, BaseException)]
        history = _history_bytes(ok[0].messages) if ok else 0
    peak = sampler.peak_rss
    return {
        "agents": agents,
        "steps": steps,
        "seconds": elapsed,
        "steps_per_s": agents * steps / elapsed,
        "errors": len(errors),
        "first_error": repr(errors[0]) if errors else None,
        "baseline_rss": base,
        "peak_rss": peak,
        "rss_per_agent": (peak - base) / agents,
        "history_per_agent": history,
        "threads_peak": sampler.peak_threads,
        "ru_maxrss": _peak_rss(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--store", default=None, help="the run store file (default: off)")
    parser.add_argument("--floor", action="store_true", help="the bare asyncio loop instead")
    parser.add_argument(
        "--gc-tuned", action="store_true", help="gc.freeze() and a higher gen-0 threshold"
    )
    parser.add_argument(
        "--interleave", action="store_true", help="each model call yields to the loop once"
    )
    args = parser.parse_args()
    result = asyncio.run(
        main(args.agents, args.steps, args.store, args.floor, args.gc_tuned, args.interleave)
    )
    json.dump(result, sys.stdout)
