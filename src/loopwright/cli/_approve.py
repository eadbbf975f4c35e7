"""``loopwright runs approve``: decide about the calls a waiting run deferred.

What the person is shown came from a model: the tool's name, the call id, the
arguments, even the policy's explanation (a rule may quote them). Each is made
visible (:func:`~loopwright._terminal.visible` / ``json_text``: no escape sequence,
``\\r`` or bidi override acts on the terminal, no invisible character hides) and
bounded (a huge argument is cut in the middle, with how much was cut said), so a
hostile call cannot hide what it does. A call id, which the person types back, is
shown by :func:`~loopwright._terminal.as_typed`: as it is when plain ASCII, else as a
JSON string, so two ids that differ (by a space, a lookalike letter) look different.
The arguments' hash is shown in full: it is what the decision is recorded for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .._terminal import GUTTER, as_typed, cut_middle, json_text, one_line, visible
from ._options import EXIT_OK, db_option, json_option
from ._views import console, line, put, reading, short

if TYPE_CHECKING:
    from rich.console import Console

    from ..log._approvals import DeferredCall

__all__ = ["MAX_SHOWN", "approve_command", "print_pending", "shown_arguments"]

MAX_SHOWN = 4_000
"""The most characters of a call's arguments shown (the middle of longer ones is cut)."""


def shown_arguments(call: DeferredCall, limit: int = MAX_SHOWN) -> str:
    """The call's arguments as terminal-safe JSON, cut in the middle past ``limit``."""
    text = json_text(call.call.arguments, indent=2, default=str)
    return cut_middle(text, limit, marker=_CUT)


_CUT = "\n[... {cut} characters not shown: --json shows them all ...]\n"


def print_pending(out: Console, calls: list[DeferredCall]) -> None:
    """Each deferred call: tool, call id, policy and why, arguments, hash, decision.
    On a terminal, an argument's line longer than it goes on rows that begin with the
    gutter (``│``), wrapped here at its width, every character kept: wrapped by the
    terminal, its rows would begin at the first column and could pass for this
    listing's lines (a harmless call below the real one); piped, each line is written
    whole."""
    for c in calls:
        out.print()
        put(
            out,
            line(
                ("call ", "bold"),
                (as_typed(c.call_id), "bold"),  # (typed back: shown so ids that differ look so)
                f"  tool {one_line(c.call.function, 120)}",
                f"  deferred by {short(c.approver or '?', 60)}",
            ),
        )
        if c.explanation:
            put(out, line(("  why: ", "dim"), short(c.explanation, 300)))
        if c.call.parse_error:
            put(out, line(("  unparsed arguments: ", "red"), short(c.call.parse_error, 300)))
        out.print(line(("  arguments:", "dim")))
        for text in shown_arguments(c).split("\n"):  # (piped: not wrapped, copied as it is)
            put(out, line("    " + visible(text)), quote=_ARGUMENT_ROW, exact=True)
        out.print(line(("  arguments hash: ", "dim"), visible(c.arguments_hash)))  # (whole)
        if c.state != "pending":
            what = f"{c.state}: {c.decision or ''}"
            if c.message:
                what += f" ({short(c.message, 200)})"
            put(out, line(("  ", ""), (what, "yellow")))


_ARGUMENT_ROW = "    " + GUTTER  # (a row an argument's long line is wrapped onto)


@click.command("approve")
@click.argument("run")
@click.option("--approve", "approves", multiple=True, metavar="CALL_ID", help="Approve this call.")
@click.option(
    "--hash",
    "hashes",
    multiple=True,
    metavar="CALL_ID=SHA256",
    help="Approve CALL_ID only if its arguments hash is SHA256, the one shown (repeatable): "
    "the decision is pinned to the arguments you saw.",
)
@click.option(
    "--reject", "rejects", multiple=True, metavar="CALL_ID", help="Reject this call (repeatable)."
)
@click.option(
    "--message",
    "-m",
    metavar="TEXT",
    help="What the model is told about a rejected call (its error result).",
)
@click.option("--all", "all_", is_flag=True, help="Approve every pending call not rejected.")
@click.option(
    "--continue",
    "continue_",
    is_flag=True,
    help="Then continue the run, as `loopwright runs resume RUN` does (for runs started by "
    "`loopwright run`).",
)
@click.option(
    "-M",
    "--model-arg",
    "model_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --continue: a provider argument added to those recorded.",
)
@db_option
@json_option
def approve_command(
    run: str,
    approves: tuple[str, ...],
    rejects: tuple[str, ...],
    message: str | None,
    all_: bool,
    db: str | None,
    as_json: bool,
    continue_: bool = False,
    model_args: tuple[str, ...] = (),
    hashes: tuple[str, ...] = (),
) -> int:
    """Decide about the calls run RUN deferred (its status: waiting).

    Without a decision, show the pending calls. With --approve / --reject / --all,
    record the decisions (all or none: a call not pending is refused), then continue
    the run: --continue here, `loopwright runs resume RUN`, or from Python
    `lw.resume(RUN, agent=...)`. When it continues, the approval policy in
    force is asked again (a call it denies stays denied) and each decision holds only
    for the arguments shown here (their hash; --hash CALL_ID=HASH refuses the
    decision if the call's arguments are not those).
    """
    from ..runtime._approve import approve, pending_calls

    pinned: dict[str, str | None] = dict.fromkeys(approves)
    for pair in hashes:
        call_id, eq, digest = pair.rpartition("=")  # (a hash has no "=")
        if not eq or not call_id or not digest:
            raise click.BadParameter(f"expected CALL_ID=SHA256, got {pair!r}", param_hint="--hash")
        pinned[call_id] = digest.strip().lower()
    both = sorted(set(pinned) & set(rejects))
    if both:
        raise click.UsageError(f"calls both approved and rejected: {both}")
    approves = tuple(pinned)
    if (continue_ or model_args) and not (approves or rejects or all_):
        raise click.UsageError("--continue goes with a decision (--approve, --reject, --all)")
    if model_args and not continue_:
        raise click.UsageError("-M goes with --continue")
    with reading(db):
        waiting = pending_calls(run, db=db)
        if not (approves or rejects or all_):
            if as_json:
                click.echo(json_text([c.model_dump(mode="json") for c in waiting]))
                return EXIT_OK
            if not waiting:
                click.echo(f"run {visible(run)} has no call waiting for approval", err=True)
                return EXIT_OK
            print_pending(console(), waiting)
            click.echo(
                f"\napprove: loopwright runs approve {visible(run)} --all  (or --approve "
                "CALL_ID / --hash CALL_ID=ARGUMENTS_HASH to approve only the arguments shown "
                "/ --reject CALL_ID -m TEXT)",
                err=True,
            )
            return EXIT_OK
        decided = approve(
            run,
            approve=pinned,
            reject=list(rejects),
            all=all_,
            message=message,
            db=db,
        )
    if as_json and not continue_:
        click.echo(json_text([c.model_dump(mode="json") for c in decided]))
        return EXIT_OK
    rejected = set(rejects)
    for c in decided:
        verb = "rejected" if c.call_id in rejected else "approved"
        click.echo(
            f"{verb} call {as_typed(c.call_id)} ({one_line(c.call.function, 120)}), "
            f"arguments hash {visible(c.arguments_hash[:16])}",
            err=continue_,  # (with --continue, stdout is the continued run's)
        )
    if not continue_:
        return EXIT_OK
    from ._resume import resume_command

    code: int = click.get_current_context().invoke(
        resume_command, run=run, model_args=model_args, force=False, db=db,
        as_json=as_json, quiet=False,
    )  # fmt: skip
    return code
