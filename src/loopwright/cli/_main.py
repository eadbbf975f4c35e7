"""The ``loopwright`` command group, and how errors become exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sqlite3
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

import click

from .._errors import ConfigurationError, error_text
from ._exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ._views import cli_text

__all__ = ["cli", "error_line", "main"]

DEBUG_ENV = "LOOPWRIGHT_DEBUG"


# Each command is imported when it is run or asked for its help (they import the
# library's parts), so `loopwright --help` costs little: name -> (module, attribute, the
# line `loopwright --help` shows, which tests/cli check is the command's own).
COMMANDS = {
    "eval": (
        "._eval",
        "eval_command",
        "Evaluate the tasks in FILE.py (or only FILE.py@TASK) over their datasets.",
    ),
    "mcp": (
        "._mcp",
        "mcp_group",
        "Model Context Protocol: serve loopwright tools and agents to MCP clients.",
    ),
    "models": ("._models", "models_command", "List the model providers and how to configure each."),
    "run": ("._run", "run_command", "Run the standard agent on TASK and print its answer."),
    "runs": (
        "._runs",
        "runs_group",
        "Browse the run store: list runs, show one, export one (JSON, or OTLP spans).",
    ),
    "view": (
        "._view",
        "view_command",
        "See your runs in a browser: runs and evals, conversations, transcripts, live.",
    ),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use (see ``COMMANDS``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module, __package__), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, line) for name, (_, _, line) in sorted(COMMANDS.items())])


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="loopwright", prog_name="loopwright")
@click.option(
    "--debug",
    is_flag=True,
    help=f"Show tracebacks of errors (also ${DEBUG_ENV}=1).",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Build, run, observe and evaluate LLM agents.

    \b
    loopwright run "TASK"          run the standard agent (the embedded model by default)
    loopwright eval FILE.py        evaluate an agent over a dataset
    loopwright runs list           browse the run store
    loopwright view                see your runs in a browser, live
    loopwright models              list model providers and how to configure them
    loopwright mcp serve FILE.py:X serve tools or an agent as an MCP server

    `loopwright COMMAND --help` tells more.
    """
    ctx.obj = {"debug": debug or os.environ.get(DEBUG_ENV) == "1"}


def _debug(args: list[str]) -> tuple[list[str], bool]:
    """``args`` with ``--debug`` moved before the command (it is ``loopwright``'s own
    option, but users put it after the command too; not after ``--``), and whether it
    is on."""
    cut = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:cut]:
        return args, os.environ.get(DEBUG_ENV) == "1"
    return ["--debug", *(a for a in args[:cut] if a != "--debug"), *args[cut:]], True


def error_line(error: BaseException) -> str:
    """The one line (``error: Type: message``) a failure is reported with."""
    from ..log import RunStoreError

    if isinstance(error, (ConfigurationError, RunStoreError)):
        return f"error: {cli_text(str(error))}"
    if isinstance(error, sqlite3.DatabaseError):  # a damaged file the store did not name
        return f"error: the run store cannot be read ({cli_text(str(error))}); is it damaged?"
    return f"error: {cli_text(error_text(error))}"


class _LogLine(logging.Handler):
    """Where log records go when nothing else handles them (in place of
    ``logging.lastResort``): one line each, the traceback only under ``--debug``."""

    def __init__(self, debug: bool) -> None:
        super().__init__(logging.WARNING)
        self.debug = debug

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = f"{record.levelname.lower()}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                if self.debug:
                    line += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
                else:
                    line += f" ({error_text(record.exc_info[1])})"
            click.echo(cli_text(line), err=True)
        except Exception:
            self.handleError(record)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit
    code: 0 done, 1 error, 2 usage error, 3 ended by a limit, 130 interrupted.

    Every failure is one line on stderr (``error: ...``), its traceback only with
    ``--debug``; so are log records nothing else handles.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    args, debug = _debug(args)
    last_resort, logging.lastResort = logging.lastResort, _LogLine(debug)
    show_warning, warnings.showwarning = warnings.showwarning, _warning_line
    try:
        return _main(args, debug)
    finally:
        logging.lastResort = last_resort
        warnings.showwarning = show_warning


def _warning_line(message: Warning | str, *_: Any, **__: Any) -> None:
    """A Python warning (e.g. the local sandbox's) as one line, without its source."""
    click.echo(cli_text(f"warning: {message}"), err=True)


def _main(args: list[str], debug: bool) -> int:
    try:
        with contextlib.ExitStack() as tracing:
            if os.environ.get("LOOPWRIGHT_OTEL"):  # OpenTelemetry traces of the runs
                from ..otel import cli_tracing

                tracing.enter_context(cli_tracing())
            result = cli.main(args=args, prog_name="loopwright", standalone_mode=False)
    except click.exceptions.UsageError as ex:
        ex.show()
        return EXIT_USAGE
    except (click.exceptions.Abort, KeyboardInterrupt, asyncio.CancelledError):
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as ex:
        ex.show()
        return ex.exit_code
    except BrokenPipeError:  # `loopwright runs export | head`: the reader is gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as ex:
        if debug:
            traceback.print_exc()
        click.echo(error_line(ex), err=True)
        return EXIT_USAGE if isinstance(ex, ConfigurationError) else EXIT_ERROR
    if isinstance(result, int):
        return result
    return EXIT_OK


def entry() -> None:
    """The console script: ``sys.exit(main())``."""
    sys.exit(main())
