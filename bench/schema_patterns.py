"""A schema tool's argument check, its patterns matched by ``re`` (as jsonschema does on
its own, before ``loopwright._patterns``) next to ``regex`` with a timeout (now).

The schema is an ordinary one with three patterns and a ``patternProperties`` key; each
figure is the median µs of one call's check (``SchemaSpec.bind``) over ``--rounds``
rounds of ``--calls`` calls, the two ways interleaved. Then the hostile call: how long
until ``^(a|a)+$`` against forty ``a`` and a ``!`` is refused (``re`` alone would take
minutes: not run).

    python bench/schema_patterns.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from loopwright._patterns import bounded_patterns
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
    for _ in range(opts.rounds):
        old.append(per_call(spec, opts.calls, bounded=False))
        new.append(per_call(spec, opts.calls, bounded=True))
    print(f"{'check of one call (median µs)':34} {'re (before)':>12} {'regex (now)':>12}")
    print(
        f"{'ordinary schema, 4 patterns':34} {statistics.median(old):12.1f} "
        f"{statistics.median(new):12.1f}"
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


if __name__ == "__main__":
    main()
