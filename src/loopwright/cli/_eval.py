"""``loopwright eval``: evaluate tasks over their datasets."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import click

from .._collector import tuned_collector
from .._errors import ConfigurationError
from ..evals import EvalResult
from ..model import Model
from ._options import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_WAITING,
    build_model,
    db_option,
    generate_config,
    generate_options,
    json_option,
    model_options,
)
from ._recorded import CLI_KEY, eval_options
from ._trust import sign

__all__ = ["eval_command"]


def _threshold(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--fail-on-error``: a share between 0 and 1, or a whole count from 1 up."""
    if value is None:
        return None
    from ..evals._results import check_fail_on_error

    try:
        number = float(check_fail_on_error(float(value)))
        return int(number) if number >= 1 else number
    except (ValueError, ConfigurationError):
        raise click.BadParameter(
            f"expected a share between 0 and 1 (0.1) or a whole count from 1 up (5), got {value!r}"
        ) from None


@click.command("eval")
@click.argument("tasks", nargs=-1, required=True, metavar="FILE.py[@TASK]...")
@model_options
@generate_options
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the first N samples.")
@click.option(
    "--max-samples",
    type=click.IntRange(min=1),
    metavar="K",
    help="Samples in flight at once (default: as many calls as the model takes at once: "
    "1 for the embedded model, 10 for API providers).",
)
@click.option("--epochs", type=click.IntRange(min=1), metavar="E", help="Run each sample E times.")
@click.option(
    "-T",
    "--task-arg",
    "task_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument of the @task function (repeatable), checked against its type hint "
    "before any sample runs: read as JSON when that fits the hint, else as text (-T n=3, "
    "-T level=hard, -T tags='[\"a\"]'); @FILE reads the value from a file.",
)
@click.option(
    "--resume",
    metavar="RUN_ID",
    help="Continue an earlier run of the task: its scored samples are carried over and "
    "only the rest run. A run still running is refused.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --resume: resume a run recorded as running on another machine (when its "
    "process is gone).",
)
@click.option(
    "--shard",
    metavar="I/N",
    help="Run only shard I of N (1/3, 2/3, 3/3 split the samples between three "
    "processes or machines, each with its own --db); running it again carries over "
    "what it finished.",
)
@click.option(
    "--merge",
    "merge",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    metavar="STORE",
    help="One eval of several shards (repeatable): the finished samples of the task in "
    "these run stores are carried into one run in --db, the missing ones run, and the "
    "metrics are over all of them.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    metavar="[ADDRESS]",
    help="Run the samples on Ray (pip install 'loopwright[ray]'): --ray alone starts a "
    "local Ray; --ray ADDRESS joins a cluster (auto, ray://host:10001). The task is read "
    "by every worker from its file; -m names the model (no -M).",
)
@click.option(
    "--ray-env",
    multiple=True,
    metavar="NAME",
    help="An environment variable (an API key...) to send to the Ray workers (repeatable).",
)
@click.option(
    "--fail-on-error",
    "fail_on_error",
    callback=_threshold,
    metavar="X",
    help="How many failed samples (with those a hook stopped) make the exit code 1: a "
    "share between 0 and 1 of the planned samples (0.1: 10% or more failed) or a whole "
    "count (5: five or more). Default: any failed or stopped sample.",
)
@click.option(
    "--no-fail-on-error",
    is_flag=True,
    help="Failed (or stopped) samples do not change the exit code (a task that cannot "
    "run, or whose every sample failed, still does).",
)
@db_option
@json_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or results table.")
def eval_command(
    tasks: tuple[str, ...],
    model: str | None,
    model_args: tuple[str, ...],
    protocol: str | None,
    temperature: float | None,
    max_tokens: int | None,
    generate: tuple[str, ...],
    limit: int | None,
    max_samples: int | None,
    epochs: int | None,
    task_args: tuple[str, ...],
    resume: str | None,
    force: bool,
    shard: str | None,
    merge: tuple[str, ...],
    ray_address: str | None,
    ray_env: tuple[str, ...],
    fail_on_error: float | None,
    no_fail_on_error: bool,
    db: str | None,
    as_json: bool,
    quiet: bool,
) -> int:
    """Evaluate the tasks in FILE.py (or only FILE.py@TASK) over their datasets.

    Each sample runs the task's agent, is scored, and is recorded in the run store (one
    run per task). A progress bar shows done/total, errors, the running score, tokens,
    the rate and the time left; a table of metrics follows, saying how many samples
    each scorer scored: a sample that fails (raises) is not scored, and the metrics are
    over the scored ones only. A sample a hook stopped (StopRun) is scored as it stood
    and counts as failed for the exit code; one whose tool calls an approval policy
    deferred waits for approval, is not scored, and --resume continues it (the task's
    policy is asked again). --temperature, --max-tokens and -G apply to every model
    call of the agent (over the task's model when no --model is given); the replay model
    (-m replay/RUN_ID) reads its run from --db. Ctrl-C stops cleanly and keeps what
    ran: --resume RUN_ID finishes it later.

    Exit codes: 0 success; 1 a task could not run or every sample of it failed (its run
    is recorded with status error: it measured nothing), or failed and stopped samples
    reached --fail-on-error (by default: any); 2 usage error (a bad task argument, a
    task without samples...); 4 samples wait for approval (the run's status is waiting:
    the eval is not finished); 130 interrupted.

    \b
    Examples:
      loopwright eval examples/arithmetic.py --limit 5
      loopwright eval examples/arithmetic.py@arithmetic -m openai/gpt-4o-mini --max-samples 16
      loopwright eval tasks.py -T level=hard --epochs 3 --resume 36f5ec385189
      loopwright eval tasks.py --shard 2/3 --db shard2.db
      loopwright eval tasks.py --merge shard1.db --merge shard2.db --merge shard3.db
      loopwright eval tasks.py@t -m openai/gpt-4o-mini --ray auto --ray-env OPENAI_API_KEY
    """
    from ..evals import RichProgress, parse_task_args
    from ..evals._entry import _eval
    from ..evals._progress import brief
    from ..evals._runner import run_metadata

    if fail_on_error is not None and no_fail_on_error:
        raise click.UsageError("give --fail-on-error or --no-fail-on-error, not both")
    threshold: bool | float = False if no_fail_on_error else fail_on_error or True
    config = generate_config(generate, temperature, max_tokens)
    chosen: Model | str | None = (
        build_model(model, model_args, protocol, config=config, db=db)
        if model or model_args or protocol
        else None
    )
    if ray_address:
        if model_args or protocol:
            raise click.UsageError("--ray takes the model by name (-m); not -M or --protocol")
        chosen = model  # the workers build it by name, with --temperature/-G as config
    try:
        targs = parse_task_args(task_args, as_text=True) or None
    except ConfigurationError as ex:
        raise click.BadParameter(str(ex), param_hint="-T") from None
    progress = None if as_json or quiet else RichProgress(table=False)
    done: list[EvalResult] = []
    interrupted = False
    options = sign(  # (what `loopwright runs resume` needs: cli/_recorded.py, _trust.py)
        eval_options(
            tasks, task_args, model, model_args, protocol, config, max_samples, epochs, limit
        ),
        chosen,
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(run_metadata({CLI_KEY: options}))
        if progress is not None:
            stack.enter_context(progress)
        stack.enter_context(tuned_collector())  # the process is the command's
        try:
            asyncio.run(
                _eval(
                    list(tasks),
                    model=chosen,
                    config=config if chosen is None or ray_address else None,
                    max_samples=max_samples,
                    epochs=epochs,
                    limit=limit,
                    db=Path(db) if db else None,
                    resume=resume,
                    task_args=targs,
                    progress=progress,
                    collect=done.append,
                    shard=shard,
                    merge=merge,
                    backend="ray" if ray_address else "local",
                    ray_address=ray_address,
                    ray_env=ray_env,
                    force=force,
                )
            )
        except KeyboardInterrupt:
            interrupted = True
    results = done
    failed = any(r.status == "error" or r.too_many_errors(threshold) for r in results)
    waits = any(r.status == "waiting" for r in results)
    code = (
        EXIT_INTERRUPTED
        if interrupted
        else EXIT_ERROR
        if failed
        else EXIT_WAITING
        if waits
        else EXIT_OK
    )
    if as_json:
        from ..evals._progress import summary_rows
        from ..model._redact import redact_known

        summary = {"tasks": summary_rows(results), "fail_on_error": threshold, "exit_code": code}
        click.echo(redact_known(json.dumps(summary)))  # (errors redacted: summary_rows)
        return code
    if not quiet:
        _print_tables(results)
    for r in results:  # names, ids and errors are untrusted: made visible, one line each
        task, run_id = brief(r.task, 60), brief(r.run_id or "", 60)
        if r.status == "error":
            from ..model._redact import redact

            why = brief(redact(r.error) if r.error else "failed", 1000)
            click.echo(f"error: task {task}: {why}", err=True)
        elif r.status == "cancelled":
            click.echo(
                f"interrupted: {r.completed}/{r.total} samples kept in run {run_id}; "
                f"finish it with --resume {run_id}",
                err=True,
            )
        elif r.errors:
            click.echo(
                f"{r.errors} of {r.total} samples of {task} failed and are not scored "
                f"(metrics over {r.scored} scored); see `loopwright runs show {run_id}`",
                err=True,
            )
        if r.status in ("success", "waiting") and r.stopped:
            click.echo(
                f"{r.stopped} of {r.total} samples of {task} were stopped by a hook (scored "
                f"as they stood); see `loopwright runs show {run_id}`",
                err=True,
            )
        if r.status == "waiting":
            click.echo(
                f"waiting: {r.waiting} of {r.total} samples of {task} wait for approval "
                f"(not scored); continue them with --resume {run_id}",
                err=True,
            )
    return code


def _print_tables(results: list[EvalResult]) -> None:
    """Each task's metrics table and summary line, on stdout."""
    from rich.console import Console

    from ..evals._progress import result_view

    console = Console(highlight=False, markup=False, emoji=False)
    for r in results:
        if r._opened:
            console.print(result_view(r))
