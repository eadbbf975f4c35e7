"""What redacting the secrets learnt costs a run store row, before and after a change.

Each side runs in a fresh interpreter on its own source tree: "before" is ``src/`` of a
commit (``--before``, default: the one before secrets were redacted encoded too),
checked out by ``git archive`` into a temporary folder; "after" is this tree's ``src/``.
In each, 1, then 10, then 50 secrets are learnt (random keys of 40 characters, as API
keys are), and for each, rows of 1 KB and 100 KB are redacted as the writer does:
``redact_known(row)`` (an event's or a message's JSON) and ``sql_params((row,))`` (a
statement's text: both as JSON and as plain text). Rows: JSON of ordinary text (words,
code), and 100 KB of base64 (an image); none holds a secret (the common case), and one
of 1 KB holds the key base64-encoded (it is found and replaced, after only).

    python bench/redaction.py                 # before (b0414d5) and after, side by side
    python bench/redaction.py --before HEAD~3 --rounds 5

Figures are CPU time of the measuring thread, the least of several samples and rounds.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BEFORE = "b0414d5"  # main before the encoded forms were redacted
COUNTS = (1, 10, 50)


def _rows() -> dict[str, str]:
    rng = random.Random(7)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(3000)
    ]
    code = "def f(x):\n    return {'a': x, 'path': '/usr/lib/python3/site.py', 'n': 12345}\n"

    def text(size: int) -> str:
        parts: list[str] = []
        while sum(map(len, parts)) < size:
            parts.append(" ".join(rng.choices(words, k=60)) + "\n" + code)
        body = "".join(parts)[: size - 60]
        return json.dumps({"role": "tool", "content": body, "tool_call_id": "call_1"})

    blob = base64.b64encode(rng.randbytes(75_000)).decode()
    return {
        "1 KB text": text(1_000),
        "100 KB text": text(100_000),
        "100 KB base64": json.dumps({"image": "data:image/png;base64," + blob}),
    }


def _secret(rng: random.Random) -> str:
    return "sk-" + "".join(
        rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", k=37)
    )


def _time(fn: object, text: str) -> float:
    """µs of one call, in this thread's CPU time (a shared machine's load takes the
    wall clock, not this): the least of 15 samples of enough calls for ~10 ms each."""
    call = fn  # type: ignore[assignment]
    call(text)  # type: ignore[operator]  # (warm: a pattern compiled, caches filled)
    t0 = time.thread_time()
    call(text)  # type: ignore[operator]
    once = max(time.thread_time() - t0, 1e-6)
    n = max(3, min(5000, int(0.01 / once)))
    samples = []
    for _ in range(15):
        t0 = time.thread_time()
        for _ in range(n):
            call(text)  # type: ignore[operator]
        samples.append((time.thread_time() - t0) / n * 1e6)
    return min(samples)


def _run_rows() -> list[str]:
    """The JSON text of every event and message row of a 50-step run (the scripted
    model, a trivial tool: ``_per_step.py``'s "native + run store")."""
    import asyncio
    import sqlite3

    import loopwright as lw

    sys.path.insert(0, str(HERE))
    from _scenarios import add, script

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.db"
        model = lw.get_model("mock", outputs=script(STEPS, "native"))
        asyncio.run(lw.run(lw.react(tools=[add], model=model), "Add.", db=db))
        with sqlite3.connect(db) as conn:
            rows = [r[0] for r in conn.execute("SELECT data FROM events")]
            rows += [r[0] for r in conn.execute("SELECT data FROM messages")]
    return rows


STEPS = 50


def measure() -> dict[str, float]:
    """The figures of the loopwright on ``sys.path`` (run in a child)."""
    from loopwright.log._serialize import sql_params
    from loopwright.model import _redact

    rng = random.Random(1)
    rows = _rows()
    run_rows = _run_rows()
    out: dict[str, float] = {
        f"a {STEPS}-step run: rows per step": len(run_rows) / STEPS,
        f"a {STEPS}-step run: KB per step": sum(map(len, run_rows)) / STEPS / 1000,
    }
    secrets = [_secret(rng) for _ in range(max(COUNTS))]
    learnt = 0
    for count in COUNTS:
        t0 = time.thread_time()
        _redact.learn_secrets(secrets[learnt:count])
        out[f"learn {learnt + 1}-{count}, ms"] = (time.thread_time() - t0) * 1e3
        learnt = count
        for name, row in rows.items():
            out[f"{count} secrets, {name}, redact_known"] = _time(_redact.redact_known, row)
            out[f"{count} secrets, {name}, sql_params"] = _time(lambda t: sql_params((t,)), row)
        # as the writer does: each row (before), or each batch of rows (after); here a
        # batch of one step's rows, the least a batch holds when steps are slow
        per = len(run_rows) // STEPS
        batches = [run_rows[i : i + per] for i in range(0, len(run_rows), per)]
        rows_at_once = getattr(_redact, "redact_known_rows", None)
        if rows_at_once is None:
            every = _time(lambda _: [_redact.redact_known(r) for r in run_rows], "")
        else:
            every = _time(lambda _, f=rows_at_once, bs=batches: [f(b) for b in bs], "")
        out[f"{count} secrets, a {STEPS}-step run's rows, per step"] = every / STEPS
        held = json.dumps(
            {"content": "key: " + base64.b64encode(b"u:" + secrets[0].encode()).decode()}
        )
        held = _rows()["1 KB text"][:-2] + held[1:]
        out[f"{count} secrets, 1 KB holding one base64, redact_known"] = _time(
            _redact.redact_known, held
        )
    return out


def _run(src: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env = {
        k: v
        for k, v in env.items()
        if not k.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"))
    }
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def _checkout(commit: str, into: Path) -> Path:
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="turns of each side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure()))
        return
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old = _checkout(args.before, Path(tmp))
        for _ in range(args.rounds):  # (the two sides take turns; the least of each)
            for side, src in ((before, old), (after, ROOT / "src")):
                for key, value in _run(src).items():
                    side[key] = min(side.get(key, value), value)
    width = max(map(len, after))
    head = "µs per row (least of rounds), unless said"
    print(f"{head:<{width}}  {'before':>9}  {'after':>9}  after/before")
    for key, value in after.items():
        old = before.get(key)
        ratio = f"{value / old:10.1f}x" if old else ""
        was = old if old is not None else float("nan")
        print(f"{key:<{width}}  {was:9.1f}  {value:9.1f}  {ratio}")


if __name__ == "__main__":
    main()
