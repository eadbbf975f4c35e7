"""``loopwright runs replay RUN --agent file.py:agent``: run an agent again on a recorded
run, offline (``lw.replay``), or fork it live at a step (``--until K``)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

import click

from .._errors import ConfigurationError
from .._imports import import_file
from .._terminal import hanging, json_text, terminal_width, visible, wrapped
from ._options import EXIT_OK, db_option, json_option, model_options
from ._views import reading

__all__ = ["replay_command"]

EXIT_DIVERGED = 4
"""With ``--exit-code``: the agent's requests differ from the recorded ones."""


def load_agent(spec: str) -> Any:
    """The agent ``module:attr`` or ``file.py:attr`` names."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ConfigurationError(f"--agent: give module:attr or file.py:attr, not {spec!r}")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise ConfigurationError(f"--agent: no file {where!r}")
        module = import_file(path, "loopwright_cli_agent_")
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as ex:
            raise ConfigurationError(f"--agent: no module {where!r} ({ex})") from None
    agent = getattr(module, attr, None)
    if agent is None or not callable(agent):
        raise ConfigurationError(f"--agent: {where} has no agent named {attr!r}")
    return agent


@click.command("replay")
@click.argument("run")
@click.option("--agent", "agent_spec", required=True, metavar="FILE.py:NAME", help="The agent.")
@click.option(
    "--until",
    type=click.IntRange(min=0),
    metavar="K",
    help="Replay K steps from the store, then go on live (with --model): a fork.",
)
@click.option("--sample", help="Replay this sample (id or key) of an eval's run.")
@click.option("--exit-code", is_flag=True, help="Exit with 4 when the requests differ.")
@model_options
@db_option
@json_option
def replay_command(
    run: str,
    agent_spec: str,
    until: int | None,
    sample: str | None,
    exit_code: bool,
    model: str | None,
    model_args: tuple[str, ...],
    protocol: str | None,
    db: str | None,
    as_json: bool,
) -> int:
    """Run an agent again on the recorded RUN, offline: the model's outputs and the
    tools' results come from the run store (no tool runs), and the replay stops at the
    first step whose request (messages, tool list, config) differs from the recorded
    one. With --until K, the first K steps come from the store and the agent goes on
    live with --model: a fork of the run at step K. The replay is a new run."""
    from ..runtime import replay
    from ._options import build_model

    agent = load_agent(agent_spec)
    chosen = build_model(model, model_args, protocol, db=db) if model is not None else None
    with reading(db):
        result = asyncio.run(
            replay(run, agent=agent, db=db, until=until, model=chosen, sample=sample)
        )
    d = result.divergence
    code = EXIT_DIVERGED if exit_code and d is not None else EXIT_OK
    if as_json:
        click.echo(
            json_text(
                {
                    "run_id": result.run_id,
                    "replay_of": result.replay_of,
                    "until": until,
                    "replayed_steps": result.replayed_steps,
                    "recorded_steps": result.recorded_steps,
                    "live_calls": result.live_calls,
                    "status": result.state.completed,
                    "divergence": None if d is None else d.__dict__,
                }
            )
        )
        return code
    click.echo(visible(f"replay of {result.replay_of}: new run {result.run_id}"))
    click.echo(
        f"{result.replayed_steps} of {result.recorded_steps} steps from the store"
        + (f", {result.live_calls} model calls live" if until is not None else "")
    )
    if d is None:
        click.echo("every request was the recorded one")
    else:
        # (lines after the first quoted; on a terminal, a long one cut into quoted rows:
        # wrapped by the terminal, a row could read "  replayed: ..." at the first column)
        width = terminal_width(sys.stdout)
        click.echo(wrapped(hanging(f"differs at {d.describe()}"), width))
        click.echo(wrapped(hanging(f"  recorded: {d.recorded}"), width))
        click.echo(wrapped(hanging(f"  replayed: {d.replayed}"), width))
    return code
