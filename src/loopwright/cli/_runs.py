"""``loopwright runs list | show | export``: the run store from the shell."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._terminal import json_text
from ._approve import approve_command
from ._diff import diff_command
from ._options import EXIT_OK, db_option, json_option
from ._replay import replay_command
from ._resume import prune_command, resume_command
from ._show import show_command
from ._views import cells, console, money, reading, result, short, when

__all__ = ["runs_group"]


@click.group("runs")
def runs_group() -> None:
    """Browse the run store: list runs, show one, export one (JSON, or OTLP spans)."""


runs_group.add_command(show_command)
runs_group.add_command(diff_command)
runs_group.add_command(replay_command)
runs_group.add_command(resume_command)
runs_group.add_command(prune_command)
runs_group.add_command(approve_command)  # deferred approval (issue 21)


@runs_group.command("list")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--name", help="Only runs with this name (e.g. a task's).")
@click.option("--agent", help="Only runs of the agent with this name.")
@click.option("--version", "version", help="Only runs of this agent version (or its prefix).")
@click.option(
    "--status",
    type=click.Choice(
        [
            "running",
            "success",
            "error",
            "cancelled",
            "limit",
            "stopped",
            "interrupted",
            "waiting",
            "damaged",
        ]
    ),
    help="Only runs with this status (damaged: the rows that cannot be read).",
)
@db_option
@json_option
def list_command(
    limit: int,
    name: str | None,
    status: str | None,
    db: str | None,
    as_json: bool,
    agent: str | None = None,
    version: str | None = None,
) -> int:
    """List the most recent runs, newest first. A run whose row cannot be read (a file
    hand-edited, or written by another version) is listed as damaged, with why."""
    from ..log import list_runs
    from ..log._info import DAMAGED, UNKNOWN_TIME

    with reading(db):
        runs = list_runs(db, limit=limit, name=name, status=status, agent=agent, version=version)
    if as_json:
        click.echo(json_text([r.model_dump(mode="json") for r in runs]))
        return EXIT_OK
    if not runs:
        click.echo("no runs yet", err=True)
        return EXIT_OK
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for column in ("id", "name", "model", "status", "created", "samples", "cost", "result"):
        table.add_column(column, no_wrap=column in ("id", "created", "status", "cost"))
    for r in runs:
        row = cells(
            short(r.id),
            short(r.name),
            short(r.model),
            short(r.status) + (f" ↻{r.resumes}" if r.resumes else ""),
            "?" if r.status == DAMAGED and r.created == UNKNOWN_TIME else when(r.created),
            str(r.samples) if r.samples else "",
            money(r.cost, r.unpriced_calls),
            short(result(r, 50), 100 if r.status == DAMAGED else 50),  # (damaged: why)
        )
        row[3].stylize(
            {
                "error": "red",
                "limit": "yellow",
                "cancelled": "yellow",
                "stopped": "yellow",
                "waiting": "cyan",
                DAMAGED: "magenta",
            }.get(r.status, "")
        )
        table.add_row(*row)
    console().print(table)
    return EXIT_OK


@runs_group.command("export")
@click.argument("run", required=False)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The JSON file to write; - or none: standard output.",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(["json", "otlp"]),
    default="json",
    show_default=True,
    help="json: the run store's JSON; otlp: send the run's OpenTelemetry spans over "
    "OTLP/HTTP (needs loopwright[otel]).",
)
@click.option(
    "--endpoint",
    help="With --format otlp: the traces URL (default: $OTEL_EXPORTER_OTLP_ENDPOINT, "
    "else http://localhost:4318/v1/traces).",
)
@click.option(
    "--contents",
    is_flag=True,
    help="With --format otlp: include messages, tool arguments and results (they may "
    "hold personal data).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="With --format otlp: the most seconds a request to the endpoint takes, its "
    "retries included (an endpoint that is down costs about this); default 10.",
)
@db_option
def export_command(
    run: str | None,
    output: str | None,
    db: str | None,
    format_: str = "json",
    endpoint: str | None = None,
    contents: bool = False,
    timeout: float | None = None,
) -> int:
    """Export a run (default: the latest) as JSON, with every event, message and
    sample, to standard output (`loopwright runs export ID > run.json`) or to the file
    -o names (whose name is then printed); `lw.import_run()` or `lw.load_run(FILE)` read
    it back. `--format otlp` sends it to an OpenTelemetry collector instead, as the
    spans tracing would have made (for runs made before tracing was on)."""
    from ..log import export_run
    from ..log._export import write_run

    if format_ == "otlp":
        if output is not None:
            raise click.UsageError("--format otlp sends the run to --endpoint; drop -o")
        from ..otel._instrument import _import

        _import()
        from ..otel._export import send_otlp

        with reading(db):
            trace_id, count = send_otlp(
                run, db=db, endpoint=endpoint, contents=contents, timeout=timeout or 10.0
            )
        click.echo(f"sent {count} spans, trace {trace_id}", err=True)
        return EXIT_OK
    if endpoint is not None or contents or timeout is not None:
        raise click.UsageError("--endpoint, --contents and --timeout go with --format otlp")

    if output is None or output == "-":
        with reading(db):
            write_run(run, sys.stdout, db=db)
        return EXIT_OK
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    with reading(db):
        export_run(run, path, db=db)
    click.echo(str(path))
    return EXIT_OK
