"""``loopwright run``: run the standard agent on a task."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from .._collector import tuned_collector
from .._errors import ConfigurationError
from .._errors import error_text as describe
from .._terminal import hanging, json_text, terminal_width, visible, wrapped
from ..agents import Agent, AgentState, react
from ..limits import DEFAULT_MAX_STEPS, Limit, cost_limit, step_limit, time_limit, token_limit
from ..log import default_db_path, list_runs
from ..model import Model, ModelCall, UserMessage, model_hook
from ..model._stream import stream_to
from ..runtime import current_recording, run
from ._options import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LIMIT,
    EXIT_OK,
    build_model,
    db_option,
    generate_config,
    generate_options,
    json_option,
    model_options,
)
from ._recorded import run_options
from ._tools import BUILTIN_TOOLS, SANDBOX_TOOLS, resolve_tools
from ._trust import sign
from ._views import cli_text, money, reading

__all__ = ["execute", "run_command"]

DEFAULT_SYSTEM = (
    "You are a helpful, careful assistant. Use the tools you have when they help, and "
    "answer the user's task directly and concisely."
)
ANSWERED = frozenset({"submit", "answer", "stop_keyword", "handoff"})
APPROVAL_PRESETS = ("ci", "dev", "prod", "defer", "auto", "human")


class _Observed:
    """Wraps the agent to learn the run's id (the run opens around the agent) and count
    its model calls."""

    def __init__(self, agent: Agent, name: str) -> None:
        self.agent, self.name = agent, name
        self.run_id: str | None = None
        self.db: str | None = None
        self.steps = 0

    async def __call__(self, state: AgentState) -> AgentState:
        rec = current_recording()
        if rec is not None:
            self.run_id = rec.run_id
            self.db = str(rec.db_path) if rec.db_path is not None else None
        with model_hook(self):
            return await self.agent(state)

    def before_generate(self, call: ModelCall) -> None:
        self.steps += 1

    def after_generate(self, call: ModelCall) -> None:
        pass


def _limits(
    max_steps: int, time_s: float | None, tokens: int | None, dollars: float | None = None
) -> list[Limit]:
    limits = []
    if dollars is not None:
        limits.append(cost_limit(dollars))
    if max_steps:
        limits.append(step_limit(max_steps))
    if time_s is not None:
        limits.append(time_limit(time_s))
    if tokens is not None:
        limits.append(token_limit(tokens))
    return limits


def _outcome(state: AgentState, error: BaseException | None) -> tuple[str, int]:
    if error is not None:
        return "error", EXIT_ERROR
    if state.limit is not None or state.completed == "limit":
        return "limit", EXIT_LIMIT
    if state.completed in ANSWERED:
        return "answered", EXIT_OK
    if state.completed == "waiting":  # deferred approval: not an error
        return "waiting", EXIT_OK
    return "stopped", EXIT_ERROR


@click.command("run")
@click.argument("task")
@model_options
@generate_options
@click.option(
    "--tool",
    "-t",
    "tools",
    multiple=True,
    metavar="NAME",
    help=f"A tool the agent may use (repeatable): {', '.join(BUILTIN_TOOLS)}, or "
    "module:attr / file.py:attr for your own: a Tool, a list of Tools, or a function "
    "(made a tool as @lw.tool would; one annotated to return Tools is called to make "
    "them). bash, python, text_editor and files run in a sandbox.",
)
@click.option(
    "--sandbox",
    metavar="BACKEND",
    help="Run the agent's tools in a fresh sandbox: bwrap (isolated; the default when a "
    "sandbox tool is used) or local (a host folder, not isolated).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_STEPS,
    show_default=True,
    help="End after this many model calls (exit code 3, like any limit); 0: no bound.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="End after this much wall-clock time.",
)
@click.option(
    "--token-limit", type=click.IntRange(min=1), help="End after this many tokens (in + out)."
)
@click.option(
    "--cost-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="DOLLARS",
    help="End once model calls cost this many US dollars (from the price table; a model "
    "with no known price is refused).",
)
@click.option(
    "--approval",
    type=click.Choice(APPROVAL_PRESETS),
    help="An approval policy for tool calls: ci (approve all: trusted automation), dev "
    "(ask in the terminal before running code or writing files), prod (reject those), "
    "defer (stop and wait for `loopwright runs approve` before running code or writing "
    "files), auto (approve all), human (ask about every call).",
)
@click.option("--system", metavar="PROMPT", help="The system prompt (a default one otherwise).")
@click.option(
    "--submit/--no-submit",
    default=False,
    help="Make the agent end by calling a submit tool with its answer (default: it ends "
    "when it answers without calling a tool).",
)
@click.option("--name", default="run", show_default=True, help="The run's name in the run store.")
@db_option
@json_option
@click.option("--quiet", "-q", is_flag=True, help="Do not show the agent's steps live.")
@click.option(
    "--stream/--no-stream",
    default=True,
    help="Show the model's text as it is written (default), or each reply once complete. "
    "When stderr is not a terminal the text comes as plain lines.",
)
def run_command(
    task: str,
    model: str | None,
    model_args: tuple[str, ...],
    protocol: str | None,
    temperature: float | None,
    max_tokens: int | None,
    generate: tuple[str, ...],
    tools: tuple[str, ...],
    sandbox: str | None,
    max_steps: int,
    time_limit: float | None,
    token_limit: int | None,
    cost_limit: float | None,
    approval: str | None,
    system: str | None,
    submit: bool,
    name: str,
    db: str | None,
    as_json: bool,
    quiet: bool,
    stream: bool,
) -> int:
    """Run the standard agent on TASK and print its answer.

    TASK is the task in words (- reads it from stdin). The agent's steps show live on
    stderr, the answer goes to stdout, and the run is recorded in the run store
    (`loopwright runs show RUN_ID`).

    The run ends after --max-steps model calls (25 unless you say; --max-steps 0 lifts
    the bound).

    Exit codes: 0 answered, 1 error (or stopped without an answer), 2 usage error,
    3 ended by a limit, 130 interrupted.

    \b
    Examples:
      loopwright run "What is the capital of France?"
      loopwright run "How big is /etc/hostname?" --tool bash --max-steps 10
      loopwright run "Summarise README.md" -m openai/gpt-4o-mini --tool files --sandbox local
    """
    if task == "-":
        task = sys.stdin.read()
    if not task.strip():
        raise click.BadParameter("the task is empty", param_hint="TASK")
    config = generate_config(generate, temperature, max_tokens)
    chosen = build_model(model, model_args, protocol, config=config, db=db)
    resolved = resolve_tools(tools)
    if sandbox is None and any(t in SANDBOX_TOOLS for t in tools):
        from ..sandboxes import default_sandbox_backend

        sandbox = default_sandbox_backend()
    _check_store(db)
    agent = _Observed(
        # max_steps=None: the agent has no bound of its own; the run's step limit is it
        react(
            name=name,
            prompt=system or DEFAULT_SYSTEM,
            tools=resolved,
            submit=submit,
            max_steps=None,
        ),
        name,
    )
    state = AgentState(messages=[UserMessage(content=task)])
    limits = _limits(max_steps, time_limit, token_limit, cost_limit)
    # what `loopwright runs resume` needs to make this agent again (cli/_resume.py)
    options = sign(run_options(
        chosen, model, model_args, protocol, config, tools, sandbox, max_steps, time_limit,
        token_limit, cost_limit, approval, system, submit, name,
    ), chosen)  # fmt: skip
    source = click.get_current_context().get_parameter_source("max_steps")
    return execute(
        lambda: run(
            agent,
            state,
            model=chosen,
            limits=limits,
            name=name,
            db=Path(db) if db else None,
            sandbox=sandbox,
            approval=approval,
            metadata={"kind": "cli", "tools": [t.name for t in resolved], "cli": options},
        ),
        agent,
        chosen,
        as_json=as_json,
        quiet=quiet,
        stream=stream,
        default_bound=source is click.core.ParameterSource.DEFAULT,
    )


def execute(
    start: Callable[[], Coroutine[Any, Any, AgentState]],
    agent: _Observed,
    chosen: Model,
    *,
    as_json: bool,
    quiet: bool,
    stream: bool,
    default_bound: bool = False,
) -> int:
    """Run ``start()`` (a run, or a resumed one) with the live display and report how it
    ended; the exit code."""
    state = AgentState()
    error: BaseException | None = None
    interrupted = False
    debug = bool((click.get_current_context().find_root().obj or {}).get("debug"))
    display = None if as_json or quiet else _console_display(debug, stream)
    sink = getattr(display, "delta", None)
    try:
        # the process is the command's: its start-up heap frozen, fewer collections
        with display or contextlib.nullcontext(), stream_to(sink), tuned_collector():
            state = asyncio.run(start())
    except ConfigurationError:
        raise
    except (KeyboardInterrupt, asyncio.CancelledError) as ex:
        error, interrupted = ex, True
    except Exception as ex:
        error = ex
    status, code = _outcome(state, error)
    if interrupted:
        status, code = "interrupted", EXIT_INTERRUPTED
    report = _report(state, status, code, error, agent, chosen)
    if as_json:
        click.echo(json_text(report))
    else:
        shown = display.shown_errors if display is not None else set()
        _print(report, shown, default_bound=default_bound)
    return code


def _check_store(db: str | None) -> None:
    """Refuse a ``--db`` that is not a run store (or cannot be read) before the run
    starts, rather than after the agent's work."""
    path = Path(db) if db else default_db_path()
    if path.exists():
        with reading(db):
            list_runs(path, limit=1)


def _console_display(debug: bool, stream: bool) -> Any:
    if stream:
        from ._stream_view import StreamingDisplay

        return StreamingDisplay(tracebacks=debug)
    from ..display import console_display

    return console_display(tracebacks=debug)


def _report(
    state: AgentState,
    status: str,
    code: int,
    error: BaseException | None,
    agent: _Observed,
    model: Model,
) -> dict[str, Any]:
    error_text = None
    if error is not None:
        error_text = describe(error)
    return {
        "status": status,
        "answer": state.text if state.output is not None else None,
        "completed": state.completed,
        "limit": state.limit.model_dump() if state.limit is not None else None,
        "error": error_text,
        "run_id": agent.run_id,
        "db": agent.db,
        "model": model.name,
        "protocol": model.tool_protocol.name,
        "steps": agent.steps,
        "usage": {k: v for k, v in asdict(model.usage).items() if v is not None},
        "cost": state.cost,
        "unpriced_calls": state.unpriced_calls,
        "exit_code": code,
    }


def _warn(line: str) -> None:
    """``line`` (its lines after the first quoted: :func:`hanging`) on stderr; on a
    terminal, a row longer than it is cut here, the next rows quoted too: wrapped by the
    terminal, a row of the untrusted text would begin at the first column."""
    click.echo(wrapped(line, terminal_width(sys.stderr)), err=True)


def _print(report: dict[str, Any], shown: set[str], *, default_bound: bool = False) -> None:
    """The answer on stdout; how the run ended on stderr, unless the live display
    showed that error already (``shown``). A run ended by the default step bound says
    how to change it."""
    if report["answer"]:
        click.echo(visible(report["answer"]))
    status = report["status"]
    if status == "limit":
        line = f"stopped: {hanging(report['limit']['message'])}"
        if default_bound and report["limit"].get("type") == "step":
            line += " (the default bound: --max-steps N raises it, --max-steps 0 lifts it)"
        _warn(line)
    elif status == "error" and report["error"] not in shown:
        _warn(f"error: {hanging(cli_text(report['error']))}")  # (quoted lines)
    elif status == "stopped":
        click.echo(f"stopped without an answer ({visible(str(report['completed']))})", err=True)
    elif status == "interrupted":
        click.echo("interrupted", err=True)
    elif status == "waiting":
        click.echo(f"waiting for approval: loopwright runs approve {report['run_id']}", err=True)
    if report["run_id"]:
        tokens = report["usage"].get("total_tokens", 0)
        cost = money(report["cost"], report["unpriced_calls"])
        line = (
            f"run {report['run_id']} · {_count(report['steps'], 'step')} · {tokens} tokens"
            f"{f' · {cost}' if cost else ''} · loopwright runs show {report['run_id']}"
        )
        if report["db"] and report["db"] != str(default_db_path()):
            line += f" --db {report['db']}"
        click.secho(line, fg="bright_black", err=True)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"
