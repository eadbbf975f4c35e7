"""A/B of each constant-factor trick against the plain code it replaces, side by side.

Issue 17 item 7: a trick stays only where it saves at least 15% of a step. For each one
this runs a 50-step agent with the trick as the code has it and with the plain code
patched in its place, alternating the two in the same process (rounds interleave, the
order rotates), and prints CPU µs per step (all threads: the run store's writer too)
and wall µs per step, medians over the rounds, with the saving.

    python bench/tricks.py [--rounds N] [--steps N] [--only NAME,...]

The tricks are measured in the source tree that had them all (commit ``TRICKS_COMMIT``,
extracted with ``git archive`` into a temporary folder; each A/B runs there in a fresh
interpreter), with the plain code patched in on the "plain" side. None saved 15% of a
step, so all were removed: ``--before-after`` then times that tree and the current one
side by side (alternating fresh interpreters), per configuration.

- ``copy_model/set_fields``: copying and updating pydantic models through ``__dict__``
  (``loopwright._speedups``) instead of ``model_copy(update=...)`` and ``setattr``;
- ``mock copy``: the scripted model's copy of its outputs part by part instead of
  ``model_copy(deep=True)`` (which cannot copy arguments nested 100,000 deep: the
  part-by-part copy stays for that, written with ``model_copy``);
- ``Slots``: a hand-written semaphore instead of ``asyncio.Semaphore``;
- ``tools JSON cache``: the run store's JSON of the tools offered, cached by the
  identity of their ``ToolInfo`` objects, instead of serialised at every model event;
- ``JSON splicing``: the model event's JSON built from pieces instead of
  ``to_json(event_record(event))``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scenarios import Config, Runner, fresh_db  # noqa: E402

import loopwright  # noqa: E402, F401

NATIVE = Config("native")
STORED = Config("native + run store", store=True)
THRESHOLD = 0.15


@contextlib.contextmanager
def patched(changes: list[tuple[Any, str, Any]]) -> Iterator[None]:
    """Set each ``(object, attribute, value)``; put the old values back after."""
    old = [(obj, name, getattr(obj, name)) for obj, name, _ in changes]
    for obj, name, value in changes:
        setattr(obj, name, value)
    try:
        yield
    finally:
        for obj, name, value in old:
            setattr(obj, name, value)


def _everywhere(original: Any, replacement: Any) -> list[tuple[Any, str, Any]]:
    """Replace ``original`` in every loopwright module that imported it by name."""
    changes = []
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("loopwright"):
            continue
        for name, value in list(vars(module).items()):
            if value is original:
                changes.append((module, name, replacement))
    return changes


# --- the plain code, one function per trick -------------------------------------------
def plain_pydantic() -> list[tuple[Any, str, Any]]:
    from loopwright import _fast as _speedups

    def copy_model(m: Any, /, **update: Any) -> Any:
        return m.model_copy(update=update)

    def set_fields(m: Any, /, **values: Any) -> None:
        for name, value in values.items():
            setattr(m, name, value)

    return _everywhere(_speedups.copy_model, copy_model) + _everywhere(
        _speedups.set_fields, set_fields
    )


def plain_mock_copy() -> list[tuple[Any, str, Any]]:
    from loopwright.model.providers import mock

    return [(mock, "_copy_output", lambda item: item.model_copy(deep=True))]


class PlainSlots:
    """The connection limit with ``asyncio.Semaphore``, as the plain code has it."""

    def __init__(self, limit: int) -> None:
        self.sem = asyncio.Semaphore(limit)

    def try_take(self) -> bool:
        return False  # the plain code always goes through ``_queue``

    async def take(self) -> None:
        await self.sem.acquire()

    def give(self) -> None:
        self.sem.release()


def plain_slots() -> list[tuple[Any, str, Any]]:
    from loopwright.model import _model

    original_queue = _model._queue

    async def queue(call: Any, slot: Any, queued: float) -> None:
        if not isinstance(slot, PlainSlots) or slot.sem.locked():
            await original_queue(call, slot, queued)  # a wait: the hooks are told
        else:
            await slot.sem.acquire()

    _model._slots.clear()
    return [(_model, "Slots", PlainSlots), (_model, "_queue", queue)]


def plain_tools_json() -> list[tuple[Any, str, Any]]:
    from pydantic_core import to_json

    from loopwright.log import _serialize

    def dump_tools(tools: list[Any]) -> str:
        return to_json(tools, exclude_none=True, inf_nan_mode="constants").decode()

    return [(_serialize, "_dump_tools", dump_tools)]


def plain_splicing() -> list[tuple[Any, str, Any]]:
    from pydantic_core import to_json

    from loopwright.log import _serialize

    def dump_model_event(event: Any) -> str:
        return to_json(_serialize.event_record(event), inf_nan_mode="constants").decode()

    return [(_serialize, "_dump_model_event", dump_model_event)]


# name -> (configuration, changes giving the trick, changes giving the plain code);
# ``None`` is the code as it is
TRICKS: dict[str, tuple[Config, Callable[[], list[Any]] | None, Callable[[], list[Any]] | None]]
TRICKS = {
    "copy_model/set_fields": (NATIVE, None, plain_pydantic),
    "mock copy": (NATIVE, None, plain_mock_copy),
    "Slots": (NATIVE, None, plain_slots),
    "tools JSON cache": (STORED, None, plain_tools_json),
    "JSON splicing (and the cache)": (STORED, None, plain_splicing),
}


def _changes(make: Callable[[], list[Any]] | None) -> list[Any]:
    return make() if make is not None else []


async def measure(name: str, steps: int, rounds: int, warmup: int) -> dict[str, float]:
    config, trick, plain = TRICKS[name]
    db = fresh_db(tempfile.mkdtemp(prefix="lw-tricks-"), "tricks")
    runner = Runner(config, db)
    cpu: dict[str, list[float]] = {"trick": [], "plain": []}
    wall: dict[str, list[float]] = {"trick": [], "plain": []}
    for r in range(warmup + rounds):
        sides = ["trick", "plain"] if r % 2 == 0 else ["plain", "trick"]
        for side in sides:
            make = trick if side == "trick" else plain
            with patched(_changes(make)):
                w, c = await runner.time_one(steps)
            if r >= warmup:
                cpu[side].append(c / steps * 1e6)
                wall[side].append(w / steps * 1e6)
    med = statistics.median
    return {
        "trick_cpu": med(cpu["trick"]),
        "plain_cpu": med(cpu["plain"]),
        "trick_wall": med(wall["trick"]),
        "plain_wall": med(wall["plain"]),
    }


TRICKS_COMMIT = "66416cf"
"""The last commit with every trick in the code (before they were removed)."""
PER_STEP_CONFIGS = [
    NATIVE,
    STORED,
    Config("react", protocol="react"),
    Config("json", protocol="json"),
]


def tree_of(commit: str) -> str:
    """The ``src`` folder of ``commit``, extracted into a temporary folder."""
    folder = tempfile.mkdtemp(prefix=f"lw-src-{commit}-")
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", commit, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return os.path.join(folder, "src")


def inner_script(script: str, src: str, *args: str) -> dict[str, Any]:
    """Run ``script --inner *args`` on the source tree ``src`` in a fresh interpreter;
    its JSON answer."""
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, script, "--inner", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def inner(src: str, *args: str) -> dict[str, Any]:
    """This script's ``--inner`` mode on the source tree ``src``."""
    return inner_script(__file__, src, *args)


async def per_step(steps: int, runs: int) -> dict[str, dict[str, float]]:
    """CPU and wall µs per step of each configuration, medians of ``runs`` runs."""
    db = fresh_db(tempfile.mkdtemp(prefix="lw-tricks-"), "per_step")
    figures = {}
    for config in PER_STEP_CONFIGS:
        runner = Runner(config, db)
        for _ in range(3):
            await runner.time_one(steps)
        times = [await runner.time_one(steps) for _ in range(runs)]
        figures[config.name] = {
            "cpu": statistics.median(c for _, c in times) / steps * 1e6,
            "wall": statistics.median(w for w, _ in times) / steps * 1e6,
        }
    return figures


def tricks_table(src: str, names: list[str], steps: int, rounds: int) -> None:
    print(f"A/B per step of a {steps}-step agent, µs, median of {rounds} rounds")
    print(
        f"{'trick':32} {'configuration':20} {'CPU trick':>10} {'CPU plain':>10} "
        f"{'saves':>7} {'wall trick':>11} {'wall plain':>11}  keep (>= 15%)?"
    )
    for name in names:
        f = inner(src, "tricks", name, str(steps), str(rounds))
        saves = (f["plain_cpu"] - f["trick_cpu"]) / f["plain_cpu"]
        print(
            f"{name:32} {TRICKS[name][0].name:20} {f['trick_cpu']:10.1f} {f['plain_cpu']:10.1f} "
            f"{saves:7.1%} {f['trick_wall']:11.1f} {f['plain_wall']:11.1f}  "
            f"{'yes' if saves >= THRESHOLD else 'no'}",
            flush=True,
        )


def before_after(old: str, steps: int, rounds: int) -> None:
    new = str(HERE.parent / "src")
    samples: dict[str, dict[str, list[dict[str, float]]]] = {"before": {}, "after": {}}
    for r in range(rounds):
        sides = [("before", old), ("after", new)]
        for side, src in sides if r % 2 == 0 else sides[::-1]:
            for name, f in inner(src, "per_step", str(steps), "5").items():
                samples[side].setdefault(name, []).append(f)
    med = statistics.median
    print(f"\nPer step, {TRICKS_COMMIT} (every trick) vs this tree (none), µs, median of {rounds}")
    print(
        f"{'configuration':20} {'CPU before':>11} {'CPU after':>10} {'change':>7} "
        f"{'wall before':>12} {'wall after':>11}"
    )
    for name in samples["before"]:
        b, a = samples["before"][name], samples["after"][name]
        cb, ca = med(x["cpu"] for x in b), med(x["cpu"] for x in a)
        wb, wa = med(x["wall"] for x in b), med(x["wall"] for x in a)
        print(f"{name:20} {cb:11.1f} {ca:10.1f} {(ca - cb) / cb:+7.1%} {wb:12.1f} {wa:11.1f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        mode, *rest = sys.argv[2:]
        if mode == "tricks":
            name, steps, rounds = rest
            result: Any = asyncio.run(measure(name, int(steps), int(rounds), 3))
        else:
            steps, runs = rest
            result = asyncio.run(per_step(int(steps), int(runs)))
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--only", default="", help="comma-separated trick names")
    parser.add_argument(
        "--before-after", action="store_true", help="also time the old tree against this one"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(TRICKS)
    old = tree_of(TRICKS_COMMIT)
    tricks_table(old, names, args.steps, args.rounds)
    if args.before_after:
        before_after(old, args.steps, max(3, args.rounds // 3))


if __name__ == "__main__":
    main()
