"""Concurrency: N agents of S steps at once, in this (fresh) process; prints JSON.

    python bench/_concurrency.py --agents 2000 --steps 10 [--store DB] [--floor]
    python bench/_concurrency.py --agents 200,10000 --interleave --rounds 3 [--both]

With several counts or ``--rounds`` above 1 it is the steady throughput measurement:
each count runs in a fresh process, the counts alternating, round after round (so that
a change in the machine's load falls on all of them alike), and it prints the medians:
steps/s by the wall clock, steps/s by the process's CPU time (which other processes on
a loaded machine disturb much less: they take the cores, not this process's work), the
collector's share of the CPU time, the RSS per agent, and the load average at each
run's start. ``--both`` runs each count with the collector as it is and tuned.
``--eval SAMPLES`` measures ``lw.eval`` instead (``--agents``: samples in flight, tuned:
``tune_collector=True``).

``--interleave``: each model call yields to the event loop once before it answers, as a
call over the network does. Without it the scripted model never yields, so each agent
runs its steps back to back and only the finished agents' states are alive at once;
interleaved, every agent (its transcript, its run) is alive at the same time.

``--gc-tuned`` does what ``loopwright run`` and ``loopwright eval`` do around their agents
(``loopwright._collector.tuned_collector``): freeze the objects alive before the agents
start (``gc.freeze()``) and raise the collector's thresholds, since with thousands of
live agents full collections traverse every agent's objects again and again. The time
in collections is measured with ``gc.callbacks`` (process CPU time from each collection's
start to its end), and counted by generation.

RSS is measured against the process after imports and one warm-up agent: the peak
(sampled every 5 ms by a thread, and once more at the end while every agent's final
state is still held) minus that baseline, per agent. The history itself (the messages an
agent ends with) is the size of every object its messages hold that another agent's
messages do not (``_owned_bytes``: the list of messages, the messages, their dicts and
lists, and their own strings, such as their ids; not what all agents share, such as the
task's text or a tool's name), so that the RSS *beyond* the history can be reported.
Rounds 1-3 measured it with tracemalloc on a ``copy.deepcopy`` of the messages, which
shares the strings with the original and so counted none of them (~2 KB less for a
10-step agent: the messages' ids above all); that figure is still printed
(``history_copy_per_agent``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import dataclasses
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import _scenarios
import psutil
from _scenarios import Config, Runner
from pydantic import BaseModel

import loopwright as lw

HERE = Path(__file__).resolve().parent
#: A run shorter than this many steps is repeated in its process (batches of the same
#: agents at once), and its figures are the median batch's.
MIN_STEPS = 20_000


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _owned_bytes(messages: list[Any], other: list[Any]) -> int:
    """Bytes of the objects ``messages`` hold that ``other`` (another agent's messages)
    does not: pydantic models, dataclasses, dicts, lists, tuples, sets, strings and
    numbers, each counted once (``sys.getsizeof``, the collector's header included)."""

    def reach(roots: list[Any], skip: set[int]) -> tuple[int, set[int]]:
        """The bytes of what ``roots`` hold, not in ``skip``, and the ids of all of it."""
        seen: set[int] = set()
        total, stack = 0, list(roots)
        while stack:
            o = stack.pop()
            if o is None or isinstance(o, bool) or id(o) in seen or id(o) in skip:
                continue
            seen.add(id(o))
            total += sys.getsizeof(o)
            if isinstance(o, (list, tuple, set, frozenset)):
                stack.extend(o)
            elif isinstance(o, dict):
                stack += [*o.keys(), *o.values()]
            elif isinstance(o, BaseModel):
                stack += [o.__dict__, o.__pydantic_fields_set__]
                stack += [o.__pydantic_extra__, o.__pydantic_private__]
            elif dataclasses.is_dataclass(o):
                stack += [getattr(o, f.name) for f in dataclasses.fields(o)]
            elif not isinstance(o, (str, bytes, int, float)):
                raise TypeError(f"what does a {type(o).__name__} in a message hold?")
        return total, seen

    _, shared = reach([other], set())
    return reach([messages], shared)[0]  # the list itself too


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


class _CollectorClock:
    """Times the garbage collector's collections (``gc.callbacks``, CPU seconds) while
    installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self.by_generation = [0.0, 0.0, 0.0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        # process CPU time: on a loaded machine a collection's wall time includes the
        # time another process had the core
        if phase == "start":
            self._start = time.process_time()
        else:
            took = time.process_time() - self._start
            self.seconds += took
            self.collections[info["generation"]] += 1
            self.by_generation[info["generation"]] += took

    def __enter__(self) -> _CollectorClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self)


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
        base, start, cpu = _rss(), time.perf_counter(), time.process_time()
        sampler = _Sampler()
        tasks = [_scenarios.floor_agent(s, "Add the numbers.") for s in scripts]
        with _CollectorClock() as clock:
            results: list[Any] = await asyncio.gather(*tasks, return_exceptions=True)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        sampler.stop()
        errors = [r for r in results if isinstance(r, BaseException)]
        history = _owned_bytes(results[0], results[1]) if not errors else 0
        history_copy = _history_bytes(results[0]) if not errors else 0
        gc_seconds, timed = clock.seconds, [(elapsed, cpu, clock.seconds)]
    else:
        runner = Runner(Config("concurrency", store=store is not None), store)
        make = _interleaved_model if interleave else runner.model
        await runner.run(make(steps))
        # a short run (200 agents: 2,000 steps, half a second) is repeated in this process,
        # batch after batch of `agents` at once, and its figures are the median batch's
        batches = max(1, MIN_STEPS // (agents * steps))
        models = [[make(steps) for _ in range(agents)] for _ in range(batches)]
        gc.collect()
        base = _rss()
        sampler = _Sampler()
        # what `loopwright run` and `loopwright eval` do around their agents
        tuning: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        if gc_tuned:  # (imported here: the "before" side of a comparison may not have it)
            from loopwright._collector import tuned_collector

            tuning = tuned_collector()
        timed: list[tuple[float, float, float]] = []  # (wall, CPU, collector) seconds
        errors, results = [], []
        with tuning, _CollectorClock() as clock:
            while models:
                batch, gc_before = models.pop(), clock.seconds
                start, cpu = time.perf_counter(), time.process_time()
                results = await asyncio.gather(
                    *(runner.run(m) for m in batch), return_exceptions=True
                )
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                timed.append((elapsed, cpu, clock.seconds - gc_before))
                errors += [r for r in results if isinstance(r, BaseException)]
                del batch
                if models:  # the next batch's peak holds only its own agents
                    results = []
        sampler.stop()
        elapsed, cpu, gc_seconds = sorted(timed)[len(timed) // 2]  # the median batch (wall)
        ok = [r for r in results if not isinstance(r, BaseException)]
        history = _owned_bytes(ok[0].messages, ok[1].messages) if len(ok) > 1 else 0
        history_copy = _history_bytes(ok[0].messages) if ok else 0
    peak = sampler.peak_rss
    return {
        "agents": agents,
        "steps": steps,
        "seconds": elapsed,
        "batches": len(timed),
        "steps_per_s": agents * steps / elapsed,
        "cpu_seconds": cpu,
        "steps_per_cpu_s": agents * steps / cpu,
        "gc_seconds": gc_seconds,
        "gc_share": gc_seconds / cpu,
        "collections": clock.collections,
        "gc_seconds_by_generation": clock.by_generation,
        "gc_tuned": gc_tuned,
        "interleave": interleave,
        "errors": len(errors),
        "first_error": repr(errors[0]) if errors else None,
        "baseline_rss": base,
        "peak_rss": peak,
        "rss_per_agent": (peak - base) / agents,
        "history_per_agent": history,
        "history_copy_per_agent": history_copy,
        "threads_peak": sampler.peak_threads,
        "ru_maxrss": _peak_rss(),
    }


async def _eval_answer(messages: list[Any], *_: Any) -> lw.ModelOutput:
    """An eval sample's model: 9 ``add`` calls, then submit; yields to the loop first."""
    await asyncio.sleep(0)
    done = sum(1 for m in messages if m.role == "tool")
    if done >= 9:
        return lw.ModelOutput.for_tool_call("submit", {"answer": "done"})
    return lw.ModelOutput.for_tool_call("add", {"a": done, "b": 1})


def eval_main(samples: int, in_flight: int, tuned: bool) -> dict[str, Any]:
    """``lw.eval`` of ``samples`` 10-step samples, ``in_flight`` at once, no run store;
    ``tuned``: ``tune_collector=True``. Steps/s of the eval, by wall and by CPU time."""
    data = [{"id": f"q{i}", "input": "Add the numbers.", "target": "done"} for i in range(samples)]
    agent = lw.react(tools=[_scenarios.add], max_steps=None)
    task = lw.Task(data, agent=agent, scorer=lw.match())
    model = lw.get_model("mock", outputs=_eval_answer)
    lw.eval(task, model=model, max_samples=10, db=False, limit=20)  # warm up
    gc.collect()
    options: dict[str, Any] = {"tune_collector": True} if tuned else {}
    start, cpu = time.perf_counter(), time.process_time()
    with _CollectorClock() as clock:
        [result] = lw.eval(task, model=model, max_samples=in_flight, db=False, **options)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "agents": in_flight,
        "samples": samples,
        "steps_per_s": samples * 10 / elapsed,
        "steps_per_cpu_s": samples * 10 / cpu,
        "gc_share": clock.seconds / cpu,
        "collections": clock.collections,
        "errors": result.errors,
        "first_error": None,
        "rss_per_agent": 0.0,
        "history_per_agent": 0.0,
        "history_copy_per_agent": 0.0,
    }


def fresh_process(
    agents: int,
    steps: int,
    store: str | None = None,
    floor: bool = False,
    gc_tuned: bool = False,
    interleave: bool = False,
    eval_samples: int = 0,
) -> dict[str, Any]:
    """One scenario in a fresh interpreter (this file); its JSON, with the load average
    (1 min) when it started."""
    cmd = [sys.executable, str(HERE / "_concurrency.py"), "--agents", str(agents)]
    cmd += ["--steps", str(steps)]
    cmd += ["--store", store] if store else []
    cmd += ["--floor"] if floor else []
    cmd += ["--gc-tuned"] if gc_tuned else []
    cmd += ["--interleave"] if interleave else []
    cmd += ["--eval", str(eval_samples)] if eval_samples else []
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, timeout=1800)
    if out.returncode != 0:
        return {"agents": agents, "errors": -1, "first_error": out.stderr.strip()[-500:]}
    result: dict[str, Any] = json.loads(out.stdout)
    result["load"] = load
    return result


MEDIANS = (
    "steps_per_s",
    "steps_per_cpu_s",
    "gc_share",
    "rss_per_agent",
    "history_per_agent",
    "history_copy_per_agent",
)


def _brief(r: dict[str, Any], tuned: bool) -> str:
    if "steps_per_s" not in r:
        return f"{r['agents']:,} agents: failed: {r['first_error']}"
    return (
        f"{r['agents']:,} agents{', tuned' if tuned else ''}: {r['steps_per_s']:,.0f} steps/s, "
        f"{r['steps_per_cpu_s']:,.0f} per CPU s, gc {r['gc_share']:.0%}, load {r['load']:.1f}"
    )


def alternate(
    counts: list[int],
    steps: int,
    rounds: int,
    *,
    interleave: bool,
    both: bool,
    eval_samples: int = 0,
) -> dict[tuple[int, bool], dict[str, Any]]:
    """Each count (and, with ``both``, each collector setting) in a fresh process, in
    turn, ``rounds`` times; per (count, tuned): the medians of ``MEDIANS``, the errors
    summed, the loads seen and every run's figures (``runs``)."""
    runs: dict[tuple[int, bool], list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for agents in counts:
            for tuned in (False, True) if both else (False,):
                r = fresh_process(
                    agents, steps, gc_tuned=tuned, interleave=interleave, eval_samples=eval_samples
                )
                runs.setdefault((agents, tuned), []).append(r)
                print(_brief(r, tuned), file=sys.stderr, flush=True)
    out: dict[tuple[int, bool], dict[str, Any]] = {}
    for key, rs in runs.items():
        ok = [r for r in rs if "steps_per_s" in r]
        figures: dict[str, Any] = {
            name: statistics.median(r[name] for r in ok) if ok else None for name in MEDIANS
        }
        figures["errors"] = sum(r["errors"] for r in rs)
        figures["first_error"] = next((r["first_error"] for r in rs if r["first_error"]), None)
        figures["loads"] = [r.get("load") for r in rs]
        figures["rounds"] = len(ok)
        figures["runs"] = rs
        out[key] = figures
    return out


def _print_alternation(figures: dict[tuple[int, bool], dict[str, Any]], rounds: int) -> None:
    small = min(agents for agents, _ in figures)
    print(f"medians of {rounds} rounds, fresh processes in turn")
    print(
        "agents  collector  steps/s  CPU steps/s  gc share  KB/agent  beyond history  "
        "(rounds 1-3's measure)  errors"
    )
    for (agents, tuned), f in sorted(figures.items()):
        if f["steps_per_s"] is None:
            print(f"{agents:>6,}  {'tuned' if tuned else 'as is':9}  failed: {f['first_error']}")
            continue
        beyond = (f["rss_per_agent"] - f["history_per_agent"]) / 1024
        copy_measure = (f["rss_per_agent"] - (f["history_copy_per_agent"] or 0)) / 1024
        print(
            f"{agents:>6,}  {'tuned' if tuned else 'as is':9}  {f['steps_per_s']:7,.0f}  "
            f"{f['steps_per_cpu_s']:11,.0f}  {f['gc_share']:8.0%}  "
            f"{f['rss_per_agent'] / 1024:8.1f}  {beyond:14.1f}  {copy_measure:21.1f}  "
            f"{f['errors']:6}"
        )
    for (agents, tuned), f in sorted(figures.items()):
        base = figures.get((small, tuned), {})
        if agents == small or f["steps_per_s"] is None or not base.get("steps_per_s"):
            continue
        print(
            f"{agents:,} / {small:,} ({'tuned' if tuned else 'as is'}): "
            f"{f['steps_per_s'] / base['steps_per_s']:.2f}x wall, "
            f"{f['steps_per_cpu_s'] / base['steps_per_cpu_s']:.2f}x CPU"
        )
    loads = [load for f in figures.values() for load in f["loads"] if load is not None]
    if loads:
        print(f"load average (1 min) at the runs' starts: {min(loads):.1f} to {max(loads):.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--agents", required=True, help="agents at once; several (200,10000): in turn"
    )
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--store", default=None, help="the run store file (default: off)")
    parser.add_argument("--floor", action="store_true", help="the bare asyncio loop instead")
    parser.add_argument(
        "--gc-tuned", action="store_true", help="the collector tuned as the CLI tunes it"
    )
    parser.add_argument(
        "--interleave", action="store_true", help="each model call yields to the loop once"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of fresh processes, counts in turn"
    )
    parser.add_argument(
        "--both", action="store_true", help="in rounds: the collector as it is, and tuned"
    )
    parser.add_argument("--json", default=None, help="in rounds: write every figure here")
    parser.add_argument(
        "--eval",
        type=int,
        default=0,
        metavar="SAMPLES",
        help="lw.eval of SAMPLES 10-step samples, --agents of them at once (--gc-tuned: "
        "tune_collector=True); no RSS figures",
    )
    args = parser.parse_args()
    counts = [int(c) for c in args.agents.split(",")]
    if len(counts) > 1 or args.rounds > 1 or args.both:
        figures = alternate(
            counts,
            args.steps,
            args.rounds,
            interleave=args.interleave,
            both=args.both,
            eval_samples=args.eval,
        )
        _print_alternation(figures, args.rounds)
        if args.json:
            rows = [{"agents": a, "tuned": t, **f} for (a, t), f in figures.items()]
            Path(args.json).write_text(json.dumps(rows, indent=1))
        sys.exit(0)
    if args.eval:
        json.dump(eval_main(args.eval, counts[0], args.gc_tuned), sys.stdout)
        sys.exit(0)
    result = asyncio.run(
        main(counts[0], args.steps, args.store, args.floor, args.gc_tuned, args.interleave)
    )
    json.dump(result, sys.stdout)
