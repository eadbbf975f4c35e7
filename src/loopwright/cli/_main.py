"""The ``loopwright`` command group, and how errors become exit codes."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click

from .._errors import ConfigurationError, error_text
from ._eval import eval_command
from ._models import models_command
from ._options import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ._run import run_command
from ._runs import runs_group

__all__ = ["cli", "main"]

DEBUG_ENV = "LOOPWRIGHT_DEBUG"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
    loopwright models              list model providers and how to configure them

    `loopwright COMMAND --help` tells more.
    """
    ctx.obj = {"debug": debug or os.environ.get(DEBUG_ENV) == "1"}


cli.add_command(run_command)
cli.add_command(eval_command)
cli.add_command(runs_group)
cli.add_command(models_command)


def _debug(args: Sequence[str]) -> bool:
    return "--debug" in args or os.environ.get(DEBUG_ENV) == "1"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit
    code: 0 done, 1 error, 2 usage error, 3 ended by a limit, 130 interrupted."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="loopwright", standalone_mode=False)
    except click.exceptions.UsageError as ex:
        ex.show()
        return EXIT_USAGE
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as ex:
        ex.show()
        return ex.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except ConfigurationError as ex:
        if _debug(args):
            traceback.print_exc()
        click.echo(f"error: {ex}", err=True)
        return EXIT_USAGE
    except Exception as ex:
        if _debug(args):
            traceback.print_exc()
        click.echo(f"error: {error_text(ex)}", err=True)
        return EXIT_ERROR
    if isinstance(result, int):
        return result
    return EXIT_OK


def entry() -> None:
    """The console script: ``sys.exit(main())``."""
    sys.exit(main())
