"""Memory to read the first 10 samples of a large dataset file (what ``--limit 10`` reads).

    python bench/dataset_memory.py                          # this checkout
    python bench/dataset_memory.py --against /tmp/base      # side by side with another
    python bench/dataset_memory.py --mb 1000 --dir /var/tmp
    python bench/dataset_memory.py --whole --mb 100 --against /tmp/base  # every sample once

Writes a JSON Lines file and a CSV file of ``--mb`` megabytes each (records of about
1 kB: an id, a question, a padding field), then, in a fresh interpreter per figure,
opens each with ``lw.json_dataset`` / ``lw.csv_dataset`` and takes ``ds[:10]``, as the
runner does for ``limit=10``. Figures: the peak of memory traced by ``tracemalloc``
while doing so, and the process's peak resident set (``ru_maxrss``, another run
without ``tracemalloc``) beyond the one after importing ``loopwright.evals``; and the
wall time. ``--whole`` iterates over every sample once instead (counting them, keeping
none), as ``len(ds)`` or a pass over the dataset does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAD = "x" * 1000


def _write(folder: Path, mb: int) -> dict[str, Path]:
    jsonl, csv = folder / "big.jsonl", folder / "big.csv"
    target = mb << 20
    with jsonl.open("w") as fj, csv.open("w") as fc:
        fc.write("id,input,target,pad\n")
        i = 0
        while fj.tell() < target:
            i += 1
            fj.write(json.dumps({"id": f"q{i}", "input": f"question {i}", "pad": PAD}) + "\n")
            fc.write(f"q{i},question {i},{i},{PAD}\n")
    return {"jsonl": jsonl, "csv": csv}


def _child(kind: str, path: str, traced: bool, whole: bool) -> dict[str, float]:
    import resource
    import tracemalloc

    import loopwright as lw

    load = lw.json_dataset if kind == "jsonl" else lw.csv_dataset  # (imports loopwright.evals)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if traced:
        tracemalloc.start()
    t0 = time.perf_counter()
    ds = load(path)
    if whole:
        assert sum(1 for _ in ds) > 10
    else:
        first = ds[:10]
        assert [s.id for s in first] == [f"q{i}" for i in range(1, 11)]
    took = time.perf_counter() - t0
    out = {"seconds": took}
    if traced:
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    else:
        out["rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    return out


def _run(src: Path, kind: str, path: Path, traced: bool, whole: bool) -> dict[str, float]:
    args = [sys.executable, __file__, "--child", kind, str(path)]
    args += (["--traced"] if traced else []) + (["--whole"] if whole else [])
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--mb", type=int, default=500, help="size of each file (MB)")
    parser.add_argument("--dir", type=Path, help="where to write the files (default: a temp)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--whole", action="store_true", help="every sample, not the first 10")
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child[0], args.child[1], args.traced, args.whole)))
        return
    sides = {"this": HERE.parent / "src"}
    if args.against is not None:
        sides = {"other": args.against / "src", **sides}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        files = _write(Path(tmp), args.mb)
        sizes = {k: p.stat().st_size / 2**20 for k, p in files.items()}
        what = "every sample" if args.whole else "the first 10 samples"
        print(f"{what} of files of {args.mb} MB ({', '.join(sides)})\n")
        print("| file | side | tracemalloc peak MiB | RSS peak beyond import MiB | seconds |")
        print("|---|---|---:|---:|---:|")
        for kind, path in files.items():
            for name, src in sides.items():
                traced = _run(src, kind, path, True, args.whole)
                rss = _run(src, kind, path, False, args.whole)
                print(
                    f"| {kind} ({sizes[kind]:.0f} MiB) | {name} | {traced['traced_mb']:.1f} "
                    f"| {rss['rss_mb']:.1f} | {rss['seconds']:.3f} |"
                )


if __name__ == "__main__":
    main()
