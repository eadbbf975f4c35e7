"""The run store's page readers: bounded keyset reads of runs, samples and events."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import (
    event_at,
    event_bounds,
    event_page,
    runs_page,
    store_at,
    usage_totals,
)

from ._scripted import hand_loop, script


async def _run(db: Path, name: str, steps: int, infos: int = 0) -> str:
    model = lw.get_model("mock", outputs=script(steps))
    async with lw.recording(name=name, model="mock", input=f"{name} input", db=db) as rec:
        messages, out = await hand_loop(model)
        for i in range(infos):
            lw.transcript().info(f"note {i}")
        rec.finish(output=out, messages=messages)
    return rec.run_id


async def test_events_page_forwards_backwards_and_around(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = await _run(db, "long", 4, infos=250)
    with lw.load_run(run_id, db) as log:
        every = list(log.events())
        rows = event_page(log, after=None, limit=1000)
        assert [r.event.id for r in rows] == [e.id for e in every]
        seqs = [r.seq for r in rows]
        assert event_bounds(log) == (seqs[0], seqs[-1])
        assert [r.seq for r in event_page(log, limit=10)] == seqs[:10]
        assert [r.seq for r in event_page(log, after=seqs[9], limit=10)] == seqs[10:20]
        assert [r.seq for r in event_page(log, before=-1, limit=7)] == seqs[-7:]
        assert [r.seq for r in event_page(log, before=seqs[20], limit=5)] == seqs[15:20]
        assert event_page(log, after=seqs[-1]) == []
        # a page never holds more than the bound, whatever is asked
        assert len(event_page(log, limit=10**9)) == len(seqs)  # (fewer than 1,000 here)
        assert len(event_page(log, limit=0)) == 1
        row = event_at(log, every[100].id)
        assert row is not None and row.seq == seqs[100] and row.event.id == every[100].id
        assert event_at(log, "missing") is None
        assert event_bounds(log, "no such sample") is None
        steps, tokens = usage_totals(log)
        assert usage_totals(log, "") == (steps, tokens)
        assert usage_totals(log, "no such sample") == (0, 0)
        model_events = [e for e in every if isinstance(e, lw.ModelEvent)]
        assert steps == 4 == len(model_events)
        assert tokens == sum(e.usage.total_tokens for e in model_events if e.usage)
        stores = [r for r in rows if r.event.event == "store"]
        assert store_at(log, upto=stores[0].seq) == {"sums": [1]}
        assert store_at(log) == log.store() == {"sums": [1, 2, 3]}


async def test_runs_page_filters_searches_and_pages(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ids = [await _run(db, name, 2) for name in ("alpha", "beta", "gamma_1", "gamma%")]
    assert [r.id for r in runs_page(db)] == ids[::-1]
    assert [r.id for r in runs_page(db, limit=2, offset=1)] == ids[::-1][1:3]
    assert [r.name for r in runs_page(db, name="beta")] == ["beta"]
    assert [r.name for r in runs_page(db, search="alp")] == ["alpha"]
    # LIKE's wildcards are plain characters in a search
    assert [r.name for r in runs_page(db, search="gamma%")] == ["gamma%"]
    assert [r.name for r in runs_page(db, search="a_1")] == ["gamma_1"]
    assert runs_page(db, search="'; DROP TABLE runs; --") == []
    assert len(runs_page(db, model="mock")) == 4 and runs_page(db, model="other") == []
    assert len(runs_page(db, status="success")) == 4 and runs_page(db, status="error") == []


def test_running_and_interrupted_runs_are_told_apart(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    conn = lw.log._db.connect(db)
    dead = 2**22 + 12345  # (no such process: above the usual pid_max)
    host = lw.log._db.hostname()
    for i, pid in enumerate([os.getpid(), dead, os.getpid(), dead, dead]):
        conn.execute(
            "INSERT INTO runs (id, name, status, created, host, pid) VALUES (?, ?, ?, ?, ?, ?)",
            (f"r{i}", f"run {i}", "running", 1000.0 + i, host, pid),
        )
    conn.close()
    assert [r.id for r in runs_page(db, status="running")] == ["r2", "r0"]
    assert [r.id for r in runs_page(db, status="interrupted")] == ["r4", "r3", "r1"]
    assert [r.id for r in runs_page(db, status="interrupted", offset=1, limit=1)] == ["r3"]


def test_a_page_of_a_store_that_is_not_one_is_an_error(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(lw.RunStoreError, match="not a loopwright run store"):
        runs_page(other)
