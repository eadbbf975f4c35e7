"""``loopwright runs resume RUN_ID``: continue a run that stopped unfinished; and
``loopwright runs prune``: remove the sandbox folders runs no longer need.

A run started by ``loopwright run`` or ``loopwright eval`` recorded its command's
options (``metadata["cli"]``, ``_recorded.py``): the agent is made again from them and
the run goes on as the same run (``lw.resume``); an eval's run is resumed as
``loopwright eval ... --resume RUN_ID`` is (finished samples carried over, those in
flight continued from their last step). What looked like a secret was not recorded
(``_recorded.py``): the command says what was left out; give it again with ``-M`` (a
provider argument) or ``-T`` (a task argument).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .._errors import ConfigurationError
from .._terminal import visible
from ._options import db_option, json_option
from ._recorded import CLI_KEY
from ._trust import described, no_key_here, signed_here
from ._views import reading

__all__ = ["prune_command", "resume_command"]


@click.command("resume")
@click.argument("run")
@click.option(
    "-M",
    "--model-arg",
    "model_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="A provider argument added to those recorded (those that looked like secrets, "
    "e.g. api_key, were not recorded).",
)
@click.option(
    "-T",
    "--task-arg",
    "task_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="An eval's task argument added to those recorded (those that looked like secrets "
    "were not recorded).",
)
@click.option(
    "--trust",
    is_flag=True,
    help="Make the agent again from options this user did not record here (a store "
    "copied or imported from elsewhere, or edited): they name code to import, a model and "
    "its arguments, a sandbox and an approval policy. Read what they name first.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Resume a run recorded as running on another machine (when its process is gone); "
    "one alive on this machine is refused even so.",
)
@db_option
@json_option
@click.option("--quiet", "-q", is_flag=True, help="Do not show the agent's steps live.")
def resume_command(
    run: str,
    model_args: tuple[str, ...],
    force: bool,
    db: str | None,
    as_json: bool,
    quiet: bool,
    task_args: tuple[str, ...] = (),
    trust: bool = False,
) -> int:
    """Continue RUN, which stopped unfinished (killed, crashed, Ctrl-C), from its last
    recorded step, as the same run: the tool calls whose results were recorded are not
    run again, one in flight runs again, and the limits count what the run used before.
    RUN must have been started by `loopwright run` or `loopwright eval` (from Python:
    lw.resume(RUN_ID, agent=...)), by this user on this machine unless --trust is given
    (the options it recorded are signed). A finished run cannot be resumed."""
    from ..log import load_run

    with reading(db), load_run(run, db) as log:
        info = log.info
    options = info.metadata.get(CLI_KEY)
    if not isinstance(options, dict) or options.get("command") not in ("run", "eval"):
        raise ConfigurationError(
            f"run {visible(info.id)} was not started by `loopwright run` or `loopwright eval`: "
            "it did not record how to make its agent again; resume it from Python with "
            "lw.resume(RUN_ID, agent=...)"
        )
    if not trust and not signed_here(options):
        why = no_key_here()
        raise click.UsageError(
            (f"{visible(why)}.\n" if why else "")
            + f"run {visible(info.id)}: its recorded command options were not recorded by this "
            "user here, or were changed since (a store copied or imported from elsewhere, "
            "edited, or recorded before options were signed); resuming makes its "
            f"agent again from them:\n{described(options)}\nIf you trust them, run "
            "`loopwright runs resume` again with --trust."
        )
    if task_args and options["command"] != "eval":
        raise click.UsageError("-T goes with an eval's run")
    _say_left_out(options, model_args, task_args)
    args = [*_strings(options.get("model_args")), *model_args]
    if options["command"] == "eval":
        tasks = (*_strings(options.get("task_args")), *task_args)
        return _resume_eval(
            info.id, info.name or "", options, args, tasks, db, as_json, quiet, force
        )
    return _resume_run(info.id, options, args, db, as_json, quiet, force)


def _say_left_out(
    options: dict[str, Any], model_args: tuple[str, ...], task_args: tuple[str, ...]
) -> None:
    """Say on stderr what the run's recorded options left out as secrets and is not
    given again (by name: ``-M NAME=...``, ``-T NAME=...``)."""
    given = {a.partition("=")[0] for a in (*model_args, *task_args)}
    for key, flag in (("dropped_model_args", "-M"), ("dropped_task_args", "-T")):
        missing = [
            d for d in _strings(options.get(key)) if d.split(".")[0].split(" ")[0] not in given
        ]
        if missing:
            click.echo(
                f"not recorded (they looked like secrets), give them again with {flag} "
                f"NAME=VALUE if the run needs them: {visible(', '.join(missing))[:2000]}",
                err=True,
            )
    lost = _strings(options.get("dropped_config"))
    if lost:
        click.echo(
            f"generation settings not recorded (they looked like secrets): "
            f"{visible(', '.join(lost))[:2000]}",
            err=True,
        )


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _config(options: dict[str, Any]) -> Any:
    from ..model import GenerateConfig

    config = options.get("config")
    return GenerateConfig.model_validate(config) if isinstance(config, dict) else None


def _resume_run(
    run_id: str,
    options: dict[str, Any],
    model_args: list[str],
    db: str | None,
    as_json: bool,
    quiet: bool,
    force: bool,
) -> int:
    from ..agents import react
    from ..runtime import resume
    from ._options import build_model
    from ._run import DEFAULT_SYSTEM, _limits, _Observed, execute
    from ._tools import resolve_tools

    model = options.get("model")
    protocol = options.get("protocol")
    chosen = build_model(
        model if isinstance(model, str) else None,
        model_args,
        protocol if isinstance(protocol, str) else None,
        config=_config(options),
        db=db,
    )
    tools = resolve_tools(_strings(options.get("tools")))
    name = str(options.get("name") or "run")
    system = options.get("system")
    agent = _Observed(
        react(
            name=name,
            prompt=system if isinstance(system, str) else DEFAULT_SYSTEM,
            tools=tools,
            submit=bool(options.get("submit")),
            max_steps=None,
        ),
        name,
    )
    limits = _limits(
        int(options.get("max_steps") or 0),
        options.get("time_limit"),
        options.get("token_limit"),
        options.get("cost_limit"),
    )
    sandbox, approval = options.get("sandbox"), options.get("approval")
    return execute(
        lambda: resume(
            run_id,
            agent=agent,
            db=Path(db) if db else None,
            model=chosen,
            limits=limits,
            sandbox=sandbox if isinstance(sandbox, str) else None,
            approval=approval if isinstance(approval, str) else None,
            force=force,
        ),
        agent,
        chosen,
        as_json=as_json,
        quiet=quiet,
        stream=True,
    )


def _resume_eval(
    run_id: str,
    task: str,
    options: dict[str, Any],
    model_args: list[str],
    task_args: tuple[str, ...],
    db: str | None,
    as_json: bool,
    quiet: bool,
    force: bool,
) -> int:
    from ._eval import eval_command

    # the task comes from the recorded (signed) specs only: the run's name, which is
    # not signed, only picks one of them, or a task (a name) of a file they list
    specs = _strings(options.get("tasks"))
    spec = next(
        (s for s in specs if s == task or ("@" in s and s.rpartition("@")[2] == task)), None
    )
    files = [s for s in specs if s.endswith(".py")]
    if spec is None and len(files) == 1:  # (the name is looked up among its @task names)
        spec = f"{files[0]}@{task}"
    elif spec is None and files:  # several: the one defining a task of that name
        spec = _file_defining(task, files)
    if spec is None:
        raise ConfigurationError(
            f"run {visible(run_id)}: its name {visible(task)[:200]!r} is none of the tasks its "
            f"command recorded ({visible(', '.join(specs))[:500]})"
        )
    config = options.get("config") if isinstance(options.get("config"), dict) else {}
    import json

    generate = tuple(f"{k}={json.dumps(v)}" for k, v in (config or {}).items())
    ctx = click.get_current_context()
    result: int = ctx.invoke(
        eval_command,
        tasks=(spec,),
        model=options.get("model"),
        model_args=tuple(model_args),
        protocol=options.get("protocol"),
        generate=generate,
        task_args=task_args,
        max_samples=options.get("max_samples"),
        epochs=options.get("epochs"),
        limit=options.get("limit"),
        resume=run_id,
        force=force,
        db=db,
        as_json=as_json,
        quiet=quiet,
    )
    return result


def _file_defining(task: str, files: list[str]) -> str | None:
    """``FILE.py@task`` for the one file of ``files`` (signed: the user's own, imported
    by the eval that recorded them) defining ``task``; None if none, or several, do."""
    from ..evals._task import TaskError, task_names

    found = []
    for file in files:
        try:
            if task in task_names(file):
                found.append(f"{file}@{task}")
        except TaskError:  # (gone, or no tasks now: not this one)
            continue
    return found[0] if len(found) == 1 else None


@click.command("prune")
@db_option
@json_option
def prune_command(db: str | None, as_json: bool) -> int:
    """Remove the sandbox folders kept for the runs of the run store that finished or
    are no longer in it (a run that stopped unfinished keeps its sandbox's folder for
    `loopwright runs resume`; a run that finishes removes it itself)."""
    from .._terminal import json_text
    from ..runtime._resume import prune_sandbox_folders

    with reading(db):
        removed = prune_sandbox_folders(db)
    if as_json:
        click.echo(json_text({"removed": removed}))
    else:
        click.echo(f"removed {len(removed)} sandbox folder(s)", err=True)
    return 0
