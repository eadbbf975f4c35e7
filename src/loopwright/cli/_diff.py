"""``loopwright runs diff A B``: where two runs (or two samples of two evals) part ways."""

from __future__ import annotations

import dataclasses

import click

from .._terminal import json_text, visible
from ._options import EXIT_OK, db_option, json_option
from ._views import reading

__all__ = ["diff_command"]

EXIT_DIFFERENT = 4
"""With ``--exit-code``: the runs differ (1 stays "the command failed")."""


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}s"


@click.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--db-b", type=click.Path(dir_okay=False), help="Read B from this run store.")
@click.option("--sample", help="Compare this sample (id or key) of two evals.")
@click.option("--exit-code", is_flag=True, help="Exit with 4 when the runs differ.")
@db_option
@json_option
def diff_command(
    a: str,
    b: str,
    db_b: str | None,
    sample: str | None,
    exit_code: bool,
    db: str | None,
    as_json: bool,
) -> int:
    """Compare run A with run B step by step: the first step where they diverge and
    how (the tools offered, the config, the model's text, its tool calls, the tools'
    results), the versions that differ, and the token and time deltas. With
    --exit-code, exits 4 when they differ."""
    from ..log import diff_runs

    with reading(db):
        d = diff_runs(a, b, db=db, db_b=db_b, sample=sample)
    if as_json:
        click.echo(json_text(dataclasses.asdict(d)))
        return EXIT_DIFFERENT if exit_code and not d.same else EXIT_OK
    a, b = visible(d.a), visible(d.b)  # (the ids are the store's: untrusted)
    click.echo(f"a: {a}  ({d.steps_a} steps, {d.tokens_a} tokens, {_seconds(d.seconds_a)})")
    click.echo(f"b: {b}  ({d.steps_b} steps, {d.tokens_b} tokens, {_seconds(d.seconds_b)})")
    delta = d.tokens_b - d.tokens_a
    click.echo(f"tokens: {delta:+d}")
    if d.seconds_a is not None and d.seconds_b is not None:
        click.echo(f"time: {d.seconds_b - d.seconds_a:+.2f}s")
    for name, (va, vb) in d.versions.items():
        click.echo(visible(f"version of {name}: {va or '-'} -> {vb or '-'}"))
    if d.divergence is None:
        click.echo("the steps are the same")
    else:
        div = d.divergence
        click.echo(f"diverge at {div.describe()}")
        click.echo(visible(f"  a: {div.a}"))
        click.echo(visible(f"  b: {div.b}"))
    return EXIT_DIFFERENT if exit_code and not d.same else EXIT_OK
