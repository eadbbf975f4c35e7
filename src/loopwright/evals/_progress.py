"""A rich progress bar for evaluations, and the final table of metrics.

Task and scorer names, run ids, error messages and sample ids may come from a dataset,
a model or a task file: they are printed through :func:`~loopwright._terminal.visible`
as ``rich.text.Text`` (or with markup off), so no escape sequence acts on the terminal,
no ``[bold red]`` is read as markup and a lone surrogate cannot make printing fail. A
failed sample's error, wrapped, goes on rows that begin with the gutter ``│``
(``display/_rows.py``): none can pass for a line of the summary's own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._terminal import visible
from ._results import SCORED, EvalResult, SampleResult

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from ._task import Task

__all__ = ["RichProgress", "metrics_table", "result_view", "summary_line", "summary_rows"]

SHOWN_FAILURES = 3
"""Failed samples whose error a task's results name (the rest: ``runs show``)."""


def brief(text: str, n: int = 200) -> str:
    """Untrusted ``text`` on one line of at most ``n`` characters, made visible."""
    text = " ".join(visible(text[: 4 * n + 64]).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return str(n)


class RichProgress:
    """Shows an evaluation's progress on a rich console: done / total, errors, the
    running score of the first scorer, tokens, samples per second and the time left;
    then each task's table of metrics.

    Pass it as ``progress=`` to :func:`eval`; use it as a context manager (``with
    lw.RichProgress() as p: lw.eval(..., progress=p)``) so that a bar still drawn is
    closed on the way out.

    Args:
        console: Where to draw (default: a new console on stderr).
        table: Print each task's metrics table when it ends.
    """

    def __init__(self, console: Console | None = None, *, table: bool = True) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.table = table
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        self._result: EvalResult | None = None
        self._first: str | None = None
        self._tokens = 0
        self._ran = 0
        self._t0 = 0.0
        self._score_sum = 0.0
        self._scored = 0
        self._errors = 0
        self._logged = 0.0

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        progress, self._progress, self._bar = self._progress, None, None
        if progress is not None:
            progress.stop()

    # --- EvalProgress -------------------------------------------------------------------
    def task_started(self, task: Task, result: EvalResult, pending: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._stop()
        self._result = result
        self._first = task.scorer[0].name if task.scorer else None
        self._tokens, self._ran, self._t0 = 0, 0, time.monotonic()
        self._score_sum, self._scored, self._errors = 0.0, 0, 0
        self._logged = self._t0
        for done in result.samples:  # resumed ones
            self._count(done)
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._bar = self._progress.add_task(
            brief(task.name, 60), total=result.total, completed=len(result.samples), stats=""
        )
        self._progress.start()
        self._refresh()

    def tokens_used(self, tokens: int) -> None:
        self._tokens += tokens
        self._refresh()

    def _count(self, result: SampleResult) -> None:
        if result.status == "error":
            self._errors += 1
        score = result.scores.get(self._first) if self._first is not None else None
        if score is not None and result.status in SCORED:
            self._score_sum += score.value
            self._scored += 1

    def sample_finished(self, result: SampleResult) -> None:
        self._ran += 1
        self._count(result)
        if self._progress is not None and self._bar is not None:
            self._progress.advance(self._bar)
        self._refresh()
        if not self.console.is_terminal:
            self._log_line()

    def _log_line(self) -> None:
        """Without a terminal (CI logs) the bar cannot redraw: print a line at every
        tenth of the way, and at least every 30 seconds."""
        r = self._result
        if r is None:
            return
        done = len(r.samples)
        step = max(1, r.total // 10)
        now = time.monotonic()
        if done % step and done != r.total and now - self._logged < 30:
            return
        self._logged = now
        line = f"{brief(r.task, 60)}: {done}/{r.total} · {self.stats()}"
        elapsed = now - self._t0
        if self._ran and done < r.total and elapsed > 0:
            left = (r.total - done) * elapsed / self._ran
            line += f" · eta {int(left // 60)}:{int(left % 60):02d}"
        self.console.print(line, highlight=False, markup=False)

    def task_finished(self, result: EvalResult) -> None:
        self._refresh()
        self._stop()
        if self.table and result._opened:
            self.console.print(result_view(result))

    # --- drawing ------------------------------------------------------------------------
    def stats(self) -> str:
        """The bar's text: errors, the running score and how many samples it is over,
        tokens, rate."""
        if self._result is None:
            return ""
        parts = [f"{self._errors} errors" if self._errors != 1 else "1 error"]
        if self._first is not None and self._scored:
            parts.append(
                f"{brief(self._first, 40)} {self._score_sum / self._scored:.3f} of {self._scored}"
            )
        parts.append(f"{_tokens(self._tokens)} tokens")
        elapsed = time.monotonic() - self._t0
        if self._ran and elapsed > 0:
            rate = self._ran / elapsed
            parts.append(f"{rate:.2f}/s" if rate >= 0.1 else f"{60 * rate:.1f}/min")
        return " · ".join(parts)

    def _refresh(self) -> None:
        if self._progress is not None and self._bar is not None:
            self._progress.update(self._bar, stats=self.stats())


def _fmt(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def metrics_table(result: EvalResult) -> Table:
    """A task's metrics as a rich table: one row per scorer, how many samples it scored
    (of those planned), one column per metric."""
    from rich.table import Table
    from rich.text import Text

    title = f"{result.task} · {result.model or ''}"
    if result.status != "success":
        title += f" · {result.status}"
    table = Table(title=Text(brief(title)), title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("scorer", style="bold")
    table.add_column("scored", justify="right")
    names: list[str] = []
    for metrics in result.metrics.values():
        names.extend(n for n in metrics if n not in names)
    for name in names:
        table.add_column(Text(brief(name, 40)), justify="right")
    for scorer, metrics in result.metrics.items():
        scored = sum(1 for s in result.samples if s.status in SCORED and scorer in s.scores)
        table.add_row(
            Text(brief(scorer, 60)),
            f"{scored}/{result.total}",
            *(_fmt(metrics[n]) if n in metrics else "" for n in names),
        )
    return table


def result_view(result: EvalResult) -> RenderableType:
    """What is printed when a task ends: its metrics table, a warning when samples
    failed (they are not in the metrics) naming the first few and their errors, and
    its summary line."""
    from rich.console import Group
    from rich.text import Text

    from ..display._rows import Quoted

    parts: list[RenderableType] = []
    if result.metrics:
        parts.append(metrics_table(result))
    if result.errors:
        parts.append(
            Text(
                f"{result.errors} of {result.total} samples failed and are not scored: "
                f"the metrics are over {result.scored} scored samples",
                style="bold red",
            )
        )
        failed = [s for s in result.samples if s.status == "error"]
        for s in failed[:SHOWN_FAILURES]:
            epoch = f" (epoch {s.epoch})" if s.epoch > 1 else ""
            failure = Text(f"  {brief(s.id, 60)}{epoch}: {brief(s.error or 'failed')}")
            parts.append(Quoted(failure))  # (a row it wraps onto begins with the gutter)
        if len(failed) > SHOWN_FAILURES:
            parts.append(Text(f"  … and {len(failed) - SHOWN_FAILURES} more"))
    if result.waiting:
        parts.append(
            Text(
                f"{result.waiting} of {result.total} samples wait for approval (an approval "
                "policy deferred their calls) and are not scored: the eval is not finished; "
                f"resume it (--resume {result.run_id or 'RUN_ID'}) to continue them",
                style="bold cyan",
            )
        )
        parts.extend(_reasons(result, "waiting", Quoted))
    if result.stopped:
        parts.append(
            Text(
                f"{result.stopped} of {result.total} samples were stopped by a hook before "
                "they finished (scored as they stood)",
                style="bold yellow",
            )
        )
        parts.extend(_reasons(result, "stopped", Quoted))
    parts.append(Text(brief(summary_line(result), 1000), style="dim"))
    return Group(*parts)


def _reasons(result: EvalResult, status: str, quoted: Any) -> list[RenderableType]:
    """The first few samples of ``status`` and why, each on a row of its own."""
    from rich.text import Text

    these = [s for s in result.samples if s.status == status]
    rows: list[RenderableType] = []
    for s in these[:SHOWN_FAILURES]:
        epoch = f" (epoch {s.epoch})" if s.epoch > 1 else ""
        rows.append(quoted(Text(f"  {brief(s.id, 60)}{epoch}: {brief(s.reason or status)}")))
    if len(these) > SHOWN_FAILURES:
        rows.append(Text(f"  … and {len(these) - SHOWN_FAILURES} more"))
    return rows


def summary_line(result: EvalResult) -> str:
    """A task's counts in one line: samples, scored, errors, limits, those stopped and
    waiting (when any), tokens, time, and its run id (or that nothing was stored)."""
    parts: list[Any] = [
        f"{result.completed}/{result.total} samples",
        f"{result.scored} scored",
        f"{result.errors} errors" if result.errors != 1 else "1 error",
        f"{result.limits} limited",
    ]
    for n, what in ((result.stopped, "stopped"), (result.waiting, "waiting for approval")):
        if n:
            parts.append(f"{n} {what}")
    parts += [f"{_tokens(result.tokens)} tokens", f"{result.duration:.1f}s"]
    resumed = sum(1 for s in result.samples if s.resumed)
    if resumed:
        parts.append(f"{resumed} resumed from {result.resumed_from}")
    parts.append(f"run {result.run_id}" if result.run_id else "not stored (db=False)")
    return " · ".join(str(p) for p in parts)


def summary_rows(results: Sequence[EvalResult]) -> list[dict[str, Any]]:
    """Plain data for ``--json``: one entry per task, as JSON data (a task argument of
    no JSON type, a path or an enum, as its JSON form or text; a value that is not a
    finite number as null), without the task arguments that look like secrets (as the
    run store keeps them)."""
    from pydantic_core import to_jsonable_python

    from ..model._redact import redact, scrub_secrets

    rows = [
        {
            "task": r.task,
            "run_id": r.run_id,
            "db": r.db,
            "model": r.model,
            "status": r.status,
            "total": r.total,
            "completed": r.completed,
            "scored": r.scored,
            "errors": r.errors,
            "limits": r.limits,
            "stopped": r.stopped,
            "waiting": r.waiting,
            "tokens": r.tokens,
            "duration": r.duration,
            "metrics": r.metrics,
            # (made JSON first: a field of an object, a dataclass's api_key, is a key then)
            "params": scrub_secrets(to_jsonable_python(r.params, fallback=repr)),
            "resumed_from": r.resumed_from,
            "error": redact(r.error) if r.error else r.error,
        }
        for r in results
    ]
    return list(to_jsonable_python(rows, fallback=repr, inf_nan_mode="null"))
