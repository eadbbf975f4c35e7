"""Resuming a run whose stored scores cannot be read back as scores (a NaN score an
older version stored as null, a row written by hand): those samples run again; the
resume is not lost to a ValidationError."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import loopwright as lw

from .test_runner import Arithmetic, task


@pytest.mark.parametrize(
    "scores", ['{"match": {"value": null}}', '{"match": "right"}', '{"match": {"value": "x"}}']
)
async def test_unreadable_scores_run_again_on_resume(tmp_path: Path, scores: str) -> None:
    db = tmp_path / "runs.db"
    [first] = await lw.eval_async(task(3), model=Arithmetic().model(), db=db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE samples SET scores = ? WHERE run_id = ? AND id = 's1'", (scores, first.run_id)
        )
    model = Arithmetic()
    [second] = await lw.eval_async(task(3), model=model.model(), db=db, resume=first.run_id)
    assert second.status == "success", second.error
    assert list(model.calls) == ["1+1"]  # only the damaged one ran again
    by_id = {s.id: s for s in second.samples}
    assert not by_id["s1"].resumed and by_id["s1"].scores["match"].value == 1.0
    assert by_id["s0"].resumed and by_id["s2"].resumed
    assert (second.scored, second.metrics["match"]["accuracy"]) == (3, 1.0)
