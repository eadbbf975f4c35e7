"""A schema tool's argument check, its patterns matched by ``re`` (as jsonschema does on
its own, before ``loopwright._patterns``) next to ``regex`` with a timeout (now).

The schema is an ordinary one with three patterns and a ``patternProperties`` key; each
figure is the median µs of one call's check (``SchemaSpec.bind``) over ``--rounds``
rounds of ``--calls`` calls, the ways interleaved: ``re``; ``regex`` in a block of its
own; ``regex`` as ``execute_tools`` checks a call (``tools/_bind_call.py``: in the
reply's scope, which its calls share, and the event loop's slice, each made per call
here, so the figure holds a reply's cost too). Then the hostile call: how long until
``^(a|a)+$`` against forty ``a`` and a ``!`` is refused (``re`` alone would take
minutes: not run), and a reply of 64 such calls (each 0.5 s before, all in 2 s now).

    python bench/schema_patterns.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from loopwright._patterns import PatternsTooSlow, bounded_patterns, on_loop, reply_patterns
from loopwright.tools import ToolArgumentsError
from loopwright.tools._schema_spec import SchemaSpec

SCHEMA = {
    "type": "object",
    "properties": {
        "day": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "name": {"type": "string", "pattern": r"^(?!\s*$).+"},
        "id": {"type": "string", "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}$"},
    },
    "patternProperties": {"^x_[a-z]+$": {"type": "integer"}},
    "additionalProperties": False,
}
ARGS = {"day": "2026-11-27", "name": "Ann", "id": "0123abcd-0123-abcd", "x_size": 3}


def echo(**kwargs: Any) -> None:
    return None


def per_call(spec: SchemaSpec, calls: int, *, bounded: bool) -> float:
    """µs per check; ``bounded=False`` is the old way: jsonschema's ``re``."""
    check = spec.bind if bounded else spec._bind  # _bind: no block, so re
    start = time.perf_counter()
    for _ in range(calls):
        check("t", ARGS)
    return (time.perf_counter() - start) / calls * 1e6


def in_a_reply(spec: SchemaSpec, calls: int) -> float:
    """µs per check as ``execute_tools`` makes it (a reply of one call each time; a
    check the machine held up past the loop's slice is made again, as in a thread)."""
    start = time.perf_counter()
    for _ in range(calls):
        with reply_patterns():
            try:
                with on_loop():
                    spec.bind("t", ARGS)
            except PatternsTooSlow:
                spec.bind("t", ARGS)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    spec = SchemaSpec(echo, "t", SCHEMA)
    with bounded_patterns():  # installs the bound, compiles the patterns once
        spec.bind("t", ARGS)
    old: list[float] = []
    new: list[float] = []
    reply: list[float] = []
    for _ in range(opts.rounds):
        old.append(per_call(spec, opts.calls, bounded=False))
        new.append(per_call(spec, opts.calls, bounded=True))
        reply.append(in_a_reply(spec, opts.calls))
    print(
        f"{'check of one call (median µs)':34} {'re (before)':>12} {'regex':>12} {'in a reply':>12}"
    )
    print(
        f"{'ordinary schema, 4 patterns':34} {statistics.median(old):12.1f} "
        f"{statistics.median(new):12.1f} {statistics.median(reply):12.1f}"
    )
    hostile = SchemaSpec(
        echo, "t", {"type": "object", "properties": {"w": {"pattern": "^(a|a)+$"}}}
    )
    start = time.perf_counter()
    try:
        hostile.bind("t", {"w": "a" * 40 + "!"})
    except ToolArgumentsError:
        pass
    print(
        f"{'^(a|a)+$ on 40 a + !: refused in':34} {'minutes':>12} "
        f"{(time.perf_counter() - start) * 1e3:10.0f} ms"
    )
    asyncio.run(hostile_reply())


async def hostile_reply() -> None:
    """64 hostile calls in one reply through ``execute_tools``: wall-clock and CPU
    seconds until every one is refused."""
    import loopwright as lw

    params = {"type": "object", "properties": {"w": {"pattern": "^(a|a)+$"}}}
    tool = lw.Tool.from_info(lw.ToolInfo(name="t", parameters=params), echo)
    calls = [
        lw.ToolCall(id=f"c{i}", function="t", arguments={"w": "a" * 40 + "!"}) for i in range(64)
    ]
    wall, cpu = time.perf_counter(), time.process_time()
    results = await lw.execute_tools(lw.AssistantMessage(tool_calls=calls), [tool])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    refused = sum(1 for r in results if r.error is not None)
    print(
        f"{'64 such calls in one reply':34} {'minutes':>12} {wall:10.1f} s  "
        f"(CPU {cpu:.1f} s, {refused} refused)"
    )


if __name__ == "__main__":
    main()
