"""State changes cost what changed: the store's set and append next to its size.

Times one change and the checkpoint that records it (what a step pays), in a store
holding 1 KB or 10 MB besides, and an append to a list of 1,000 or 100,000 items, and
the size of the recorded patch. Each figure is the median over many changes; the
before side runs the source tree of ``tricks.TRICKS_COMMIT`` (the store before its
tracked containers) in a fresh interpreter, the after side this tree.

    python bench/state.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CASES = [
    ("set one key, store holds 1 KB", "set", 1_000),
    ("set one key, store holds 10 MB", "set", 10_000_000),
    ("append, list of 1,000", "append", 1_000),
    ("append, list of 100,000", "append", 100_000),
]


def one_case(kind: str, size: int, repeat: int) -> dict[str, float]:
    """µs per change + checkpoint (median) and the patch's JSON bytes."""
    import loopwright as lw

    if kind == "set":
        # the rest of the store: 100-byte strings in lists under 100 keys, read each step
        # as an agent's tools would (a read must not make the next checkpoint cost more)
        per_key = max(1, size // 100 // 100)
        s = lw.Store({f"k{i}": ["x" * 90] * per_key for i in range(100)})
    else:
        s = lw.Store({"items": [{"n": i} for i in range(size)]})
    s.checkpoint()
    times, sizes = [], []
    for i in range(repeat):
        began = time.perf_counter()
        if kind == "set":
            s.get("k0")  # reads of the big values, as tools do
            s.get("k1")
            s.set("counter", i)
        else:
            s.get("items").append({"n": i})
        patch = s.checkpoint()
        times.append(time.perf_counter() - began)
        sizes.append(len(json.dumps(patch)))
    return {"us": statistics.median(times) * 1e6, "patch_bytes": statistics.median(sizes)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        kind, size, repeat = sys.argv[2:5]
        print(json.dumps(one_case(kind, int(size), int(repeat))))
        return
    from tricks import TRICKS_COMMIT, inner_script, tree_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    trees = {"before": tree_of(TRICKS_COMMIT), "after": str(HERE.parent / "src")}
    print(f"State changes: µs per change + checkpoint (median of {args.repeat}), patch bytes")
    print(f"{'case':34} {'before µs':>10} {'after µs':>10} {'before B':>9} {'after B':>8}")
    results: dict[str, dict[str, Any]] = {}
    for name, kind, size in CASES:
        row = {
            side: inner_script(__file__, src, kind, str(size), str(args.repeat))
            for side, src in trees.items()
        }
        results[name] = row
        b, a = row["before"], row["after"]
        print(
            f"{name:34} {b['us']:10.1f} {a['us']:10.1f} {b['patch_bytes']:9.0f} "
            f"{a['patch_bytes']:8.0f}",
            flush=True,
        )
    for side in trees:
        sets = results[CASES[1][0]][side]["us"] / results[CASES[0][0]][side]["us"]
        appends = results[CASES[3][0]][side]["us"] / results[CASES[2][0]][side]["us"]
        print(
            f"{side}: 10 MB / 1 KB store {sets:.1f}x; 100k / 1k list {appends:.1f}x (target <= 2x)"
        )


if __name__ == "__main__":
    main()
