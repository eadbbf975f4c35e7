"""Hostile scorers and metrics: a score that is not a finite number fails its sample
(counted as failed, never scored: one NaN made every sample's mean unknown), and a
metric that raises leaves the run's summary and the other metrics recorded."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

import loopwright as lw

from .test_runner import Arithmetic, task


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
async def test_a_score_that_is_not_finite_fails_its_sample(tmp_path: Path, bad: float) -> None:
    @lw.scorer(name="s", metrics=[lw.mean()])
    def score(state: lw.AgentState, sample: lw.Sample) -> float:
        return bad if sample.id == "s0" else 1.0

    [result] = await lw.eval_async(
        task(3, scorer=score), model=Arithmetic().model(), db=tmp_path / "runs.db"
    )
    by_id = {s.id: s for s in result.samples}
    assert by_id["s0"].status == "error" and "finite" in (by_id["s0"].error or "")
    assert (result.scored, result.errors) == (2, 1)
    assert result.metrics == {"s": {"mean": 1.0}}  # over the two scored, not unknown
    [run] = lw.list_runs(tmp_path / "runs.db")
    with lw.load_run(run.id, db=tmp_path / "runs.db") as log:
        statuses = {s.id: s.status for s in log.samples}
    assert statuses["s0"] == "error"


async def test_a_score_object_that_is_not_finite_fails_its_sample() -> None:
    @lw.scorer(name="s")
    def score(state: lw.AgentState, sample: lw.Sample) -> lw.Score:
        return lw.Score(value=math.nan, answer="x")

    [result] = await lw.eval_async(task(1, scorer=score), model=Arithmetic().model(), db=False)
    assert result.samples[0].status == "error"
    assert result.metrics == {"s": {"accuracy": None, "stderr": None}}


async def test_a_metric_that_raises_keeps_the_runs_summary(tmp_path: Path) -> None:
    # accuracy refuses a value of 5; the counts and the other metrics are still recorded
    @lw.scorer(name="s")
    def score(state: lw.AgentState, sample: lw.Sample) -> float:
        return 5.0

    [result] = await lw.eval_async(
        task(2, scorer=[score, lw.match("numeric")]),
        model=Arithmetic().model(),
        db=tmp_path / "runs.db",
    )
    assert result.status == "error"
    assert "accuracy" in (result.error or "") and "between 0 and 1" in (result.error or "")
    assert result.metrics["s"] == {"accuracy": None, "stderr": 0.0}
    assert result.metrics["match"] == {"accuracy": 1.0, "stderr": 0.0}
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert run.status == "error"
    assert isinstance(run.output, dict)
    assert (run.output["scored"], run.output["total"]) == (2, 2)
    assert run.output["metrics"]["match"]["accuracy"] == 1.0


async def test_a_scorer_that_never_returns_fails_its_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a grader whose provider never answers): the eval still ends, the sample failed
    from loopwright.evals import _score

    monkeypatch.setattr(_score, "SCORE_TIMEOUT", 0.2, raising=False)

    @lw.scorer(name="s")
    async def score(state: lw.AgentState, sample: lw.Sample) -> float:
        if sample.id == "s1":
            await asyncio.Event().wait()
        return 1.0

    [result] = await lw.eval_async(
        task(3, scorer=score), model=Arithmetic().model(), db=tmp_path / "runs.db"
    )
    by_id = {s.id: s for s in result.samples}
    assert by_id["s1"].status == "error"
    assert "scorer 's' took longer than 0.2 seconds" in (by_id["s1"].error or "")
    assert (result.scored, result.errors) == (2, 1)


async def test_a_scorers_own_time_bound() -> None:
    async def slow(state: lw.AgentState, sample: lw.Sample) -> float:
        await asyncio.sleep(30)
        return 1.0

    bounded = lw.Scorer(slow, name="slow", timeout=0.05)
    with pytest.raises(TimeoutError, match=r"took longer than 0\.05 seconds"):
        await bounded(lw.AgentState(), lw.Sample(input="q"))
    with pytest.raises(lw.ConfigurationError, match="timeout"):
        lw.Scorer(slow, timeout=0)
