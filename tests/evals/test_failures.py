"""Failed samples are counted, never hidden: scored/errors on the result, in the table,
in the run store; the fail-on-error threshold; a run that was not stored has no id."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import loopwright as lw
from loopwright.evals import RichProgress
from loopwright.evals._progress import metrics_table, result_view, summary_line, summary_rows

from .test_runner import Arithmetic, task


async def test_four_of_five_crashed_are_counted_not_hidden(tmp_path: Path) -> None:
    model = Arithmetic(fail={"1+1", "2+2", "3+3", "4+4"})
    [result] = await lw.eval_async(task(5), model=model.model(), db=tmp_path / "runs.db")
    assert (result.total, result.scored, result.errors) == (5, 1, 4)
    assert result.metrics["match"]["accuracy"] == 1.0  # over the one scored sample...
    table = io.StringIO()
    Console(file=table, width=200).print(result_view(result))
    text = table.getvalue()
    assert "1/5" in text  # ...and the table says it is over 1 of 5
    assert "4 of 5 samples failed and are not scored" in text
    assert "1 scored · 4 errors" in summary_line(result)
    [row] = summary_rows([result])
    assert (row["scored"], row["errors"], row["total"]) == (1, 4, 5)
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert isinstance(run.output, dict)
    assert (run.output["scored"], run.output["errors"]) == (1, 4)


async def test_all_failed_records_no_nan(tmp_path: Path) -> None:
    model = Arithmetic(fail={f"{i}+{i}" for i in range(3)})
    [result] = await lw.eval_async(task(3), model=model.model(), db=tmp_path / "runs.db")
    assert (result.scored, result.errors) == (0, 3)
    assert result.metrics == {"match": {"accuracy": None, "stderr": None}}
    [run] = lw.list_runs(tmp_path / "runs.db")
    assert isinstance(run.output, dict)
    assert run.output["metrics"] == {"match": {"accuracy": None, "stderr": None}}
    assert "NaN" not in json.dumps(run.output)
    table = io.StringIO()
    Console(file=table, width=200).print(metrics_table(result))
    assert "0/3" in table.getvalue() and "nan" not in table.getvalue()


async def test_a_task_without_scorers_scores_nothing() -> None:
    [result] = await lw.eval_async(task(2, scorer=None), model=Arithmetic().model(), db=False)
    assert (result.completed, result.scored, result.errors) == (2, 0, 0)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        (True, True),
        (False, False),
        (4, True),  # a count: 4 or more failed
        (5, False),
        (0.8, True),  # a share of the 5 planned: 4/5 >= 0.8
        (0.9, False),
        (1.0, True),
    ],
)
def test_fail_on_error_threshold(threshold: bool | float, expected: bool) -> None:
    result = lw.EvalResult.model_validate(
        {
            "task": "t",
            "started": "2026-01-01T00:00:00Z",
            "total": 5,
            "samples": [{"id": str(i), "status": "error"} for i in range(4)]
            + [{"id": "4", "status": "success"}],
        }
    )
    assert result.too_many_errors(threshold) is expected


def test_fail_on_error_threshold_is_checked() -> None:
    result = lw.EvalResult.model_validate({"task": "t", "started": "2026-01-01T00:00:00Z"})
    assert result.too_many_errors() is False  # no errors
    for bad in (0, -1, 1.5, float("nan"), float("inf")):
        with pytest.raises(lw.ConfigurationError, match="fail_on_error"):
            result.too_many_errors(bad)


def test_a_run_not_stored_offers_no_run_id() -> None:
    out = io.StringIO()
    progress = RichProgress(Console(file=out, width=200))
    [result] = lw.eval(task(2), model=Arithmetic().model(), db=False, progress=progress)
    assert result.run_id is None and result.db is None
    printed = out.getvalue()
    assert "not stored (db=False)" in printed and " run " not in printed
