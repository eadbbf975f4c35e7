"""``loopwright runs list | show | export``: the run store from the shell."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._options import EXIT_OK, db_option, json_option

if TYPE_CHECKING:
    from rich.console import Console

    from ..log import RunInfo, RunLog, SampleInfo

__all__ = ["runs_group"]


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _when(t: datetime | None) -> str:
    return t.astimezone().strftime("%Y-%m-%d %H:%M:%S") if t is not None else ""


def _short(value: Any, n: int = 60) -> str:
    """``value`` on one line, at most ``n`` characters, safe from rich markup."""
    from rich.markup import escape

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return escape(text if len(text) <= n else text[: n - 1] + "…")


def _result(info: RunInfo) -> str:
    """What a listing shows of a run's outcome: its answer, metrics or error."""
    if info.error:
        return info.error
    out: Any = info.output
    if isinstance(out, dict) and isinstance(out.get("metrics"), dict):
        parts = []
        for scorer, metrics in out["metrics"].items():
            for name, value in (metrics or {}).items():
                if name != "stderr" and isinstance(value, (int, float)):
                    parts.append(f"{scorer} {name} {value:.3f}")
        return ", ".join(parts)
    return _short(out)


@click.group("runs")
def runs_group() -> None:
    """Browse the run store: list runs, show one, export one to JSON."""


@runs_group.command("list")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--name", help="Only runs with this name (e.g. a task's).")
@click.option(
    "--status",
    type=click.Choice(["running", "success", "error", "cancelled", "limit", "interrupted"]),
    help="Only runs with this status.",
)
@db_option
@json_option
def list_command(
    limit: int, name: str | None, status: str | None, db: str | None, as_json: bool
) -> int:
    """List the most recent runs, newest first."""
    from ..log import list_runs

    runs = list_runs(db, limit=limit, name=name, status=status)
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in runs]))
        return EXIT_OK
    if not runs:
        click.echo("no runs yet", err=True)
        return EXIT_OK
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for column in ("id", "name", "model", "status", "created", "samples", "result"):
        table.add_column(column, no_wrap=column in ("id", "created", "status"))
    for r in runs:
        style = {"error": "red", "limit": "yellow", "cancelled": "yellow"}.get(r.status, "")
        table.add_row(
            r.id,
            _short(r.name),
            _short(r.model),
            f"[{style}]{r.status}[/]" if style else r.status,
            _when(r.created),
            str(r.samples) if r.samples else "",
            _short(_result(r), 50),
        )
    _console().print(table)
    return EXIT_OK


def _answer_text(output: Any) -> Any:
    """The text of a recorded ``ModelOutput``, else the output as recorded."""
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        return output["message"].get("content")
    return output


def _sample_rows(samples: list[SampleInfo]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in samples]


@runs_group.command("show")
@click.argument("run", required=False)
@click.option("--sample", help="Show this sample's conversation (an id or key).")
@db_option
@json_option
def show_command(run: str | None, sample: str | None, db: str | None, as_json: bool) -> int:
    """Show a run: how it ended, its conversation, its samples and scores.

    RUN is a run id, a unique prefix of one, or an exported JSON file; default: the
    latest run.
    """
    from ..log import load_run

    with load_run(run, db=db) as log:
        info = log.info
        samples = log.samples
        messages = log.messages(sample)
        if as_json:
            data = {
                "run": info.model_dump(mode="json"),
                "samples": _sample_rows(samples),
                "messages": [m.model_dump(mode="json") for m in messages],
            }
            click.echo(json.dumps(data))
            return EXIT_OK
        _show(log, info, samples, messages, sample)
    return EXIT_OK


def _show(
    log: RunLog,
    info: RunInfo,
    samples: list[SampleInfo],
    messages: list[Any],
    sample: str | None,
) -> None:
    from rich.table import Table

    console = _console()
    console.print(f"[bold]run {info.id}[/]  {_short(info.name)}")
    fields = [
        ("model", _short(info.model)),
        ("status", info.status),
        ("created", _when(info.created)),
        ("finished", _when(info.finished)),
        ("input", _short(info.input, 200)),
        ("error", _short(info.error, 400)),
        ("limit", _short(info.limit.get("message")) if info.limit else None),
    ]
    for key, value in fields:
        if value:
            console.print(f"  [dim]{key:<9}[/] {value}")
    if isinstance(info.output, dict) and "metrics" in info.output:
        console.print(f"  [dim]{'metrics':<9}[/] {_short(_result(info), 400)}")
    elif info.output is not None:
        console.print(f"  [dim]{'output':<9}[/] {_short(info.output, 400)}")
    if messages:
        title = f"sample {_short(sample)}" if sample else "conversation"
        console.print(f"\n[bold]{title}[/]")
        for m in messages:
            text = m.content
            calls = getattr(m, "tool_calls", None) or []
            extra = "".join(
                f"\n    → {_short(c.function)}({_short(c.arguments, 200)})" for c in calls
            )
            console.print(f"  [cyan]{m.role:<9}[/] {_short(text, 300)}{extra}")
    if samples:
        table = Table(title="samples", title_justify="left", show_edge=False, header_style="bold")
        for column in ("id", "epoch", "status", "scores", "answer / error"):
            table.add_column(column)
        for s in samples:
            scores = ", ".join(
                f"{k} {v.get('value')}" if isinstance(v, dict) else f"{k} {v}"
                for k, v in (s.scores or {}).items()
            )
            answer = _short(s.error, 50) or _short(_answer_text(s.output), 50)
            table.add_row(_short(s.id), str(s.epoch), s.status, _short(scores, 40), answer)
        console.print()
        console.print(table)


@runs_group.command("export")
@click.argument("run", required=False)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="The JSON file to write (default: RUN_ID.json).",
)
@db_option
def export_command(run: str | None, output: str | None, db: str | None) -> int:
    """Export a run (default: the latest) to one JSON file, with every event, message
    and sample; `lw.import_run()` or `lw.load_run(FILE)` read it back."""
    from ..log import export_run, load_run

    with load_run(run, db=db) as log:
        run_id = log.run_id
    path = Path(output or f"{run_id}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    export_run(run_id, path, db=db)
    click.echo(str(path))
    return EXIT_OK
