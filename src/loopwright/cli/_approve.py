"""``loopwright runs approve``: decide about the calls a waiting run deferred.

What the person is shown came from a model: the tool's name, the call id, the
arguments, even the policy's explanation (a rule may quote them). Each is made
visible (:func:`~loopwright._terminal.visible` / ``json_text``: no escape sequence,
``\\r`` or bidi override acts on the terminal, no invisible character hides) and
bounded (a huge argument is cut in the middle, with how much was cut said, and how to
read it whole: ``--whole CALL_ID``), so a hostile call cannot hide what it does; a run
of blanks that may push the rest off the screen is noted. A call id, which the person
types back, and a tool name are shown by :func:`~loopwright._terminal.as_typed`: as
they are when plain ASCII, else as a JSON string, so two that differ (by a space, a
lookalike letter) look different.

Every approval is for what was shown (``approval/_shown.py``): one call by its
arguments' hash, shown in full (``--approve CALL_ID=HASH``: refused if the call's
arguments are others now, say after the run was continued elsewhere and waits again
with a call of the same id); the calls shown whole by the listing's digest of them
(``--all --shown DIGEST``: refused if the calls waiting are not those). ``--all`` never
approves a call whose arguments the listing cut: the listing and the command's output
name each such call, and how to read it whole and approve it by its hash. The
listing ends with how many calls of each tool wait, the rarest first: a call of
another tool among many alike is said at the end, not only in the middle of the list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .._terminal import GUTTER, as_typed, cut_middle, json_text, shell_word, visible
from ..approval._shown import (
    MAX_NAME,
    MAX_SHOWN,
    arguments_text,
    listing_digest,
    notes,
    shown_whole,
    tools_summary,
)
from ._options import EXIT_OK, db_option, json_option
from ._views import console, line, put, reading, short

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from ..log._approvals import DeferredCall

__all__ = ["MAX_SHOWN", "approve_command", "print_pending", "shown_arguments"]


def shown_arguments(call: DeferredCall, limit: int | None = MAX_SHOWN) -> str:
    """The call's arguments as terminal-safe JSON, cut in the middle past ``limit``
    (``None``: whole)."""
    text = arguments_text(call.call)
    return text if limit is None else cut_middle(text, limit, marker=_CUT)


_CUT = "\n[... {cut} characters not shown: --whole CALL_ID shows them all ...]\n"


def print_pending(
    out: Console,
    calls: list[DeferredCall],
    run: str | None = None,
    *,
    whole: bool = False,
    db: str | None = None,
) -> None:
    """Each deferred call: tool, call id, policy and why, arguments, hash, decision;
    with ``run``, how to approve it (a call cut: how to read it whole first).
    ``whole``: every call's arguments uncut. ``db``: the store given (``--db``), which
    the commands printed name too.
    On a terminal, an argument's line longer than it goes on rows that begin with the
    gutter (``│``), wrapped here at its width, every character kept: wrapped by the
    terminal, its rows would begin at the first column and could pass for this
    listing's lines (a harmless call below the real one); piped, each line is written
    whole."""
    for c in calls:
        out.print()
        name = MAX_NAME if not whole else len(c.call_id) + len(c.call.function)  # (whole: all)
        typed = as_typed(c.call_id, name)  # (typed back: shown so ids that differ look so)
        put(
            out,
            line(
                ("call ", "bold"),
                (typed, "bold"),
                f"  tool {as_typed(c.call.function, name)}",  # (a lookalike shows)
                f"  deferred by {short(c.approver or '?', 60)}",
            ),
        )
        if c.explanation:
            put(out, line(("  why: ", "dim"), short(c.explanation, 300)))
        if c.call.parse_error:
            put(out, line(("  unparsed arguments: ", "red"), short(c.call.parse_error, 300)))
        out.print(line(("  arguments:", "dim")))
        text = shown_arguments(c, None if whole else MAX_SHOWN)
        for row in text.split("\n"):  # (piped: not wrapped, copied as it is)
            put(out, line("    " + visible(row)), quote=_ARGUMENT_ROW, exact=True)
        for note in notes(text):  # (a run of blanks may have pushed the rest off screen)
            out.print(line(("  note: ", "yellow"), note))
        out.print(line(("  arguments hash: ", "dim"), visible(c.arguments_hash)))  # (whole)
        if c.state != "pending":
            what = f"{c.state}: {c.decision or ''}"
            if c.message:
                what += f" ({short(c.message, 200)})"
            put(out, line(("  ", ""), (what, "yellow")))
        elif run is not None and not (whole or shown_whole(c.call)):
            put(out, line(("  cut: ", "yellow"), f"read it whole first: {_command(run, db)} "
                          f"--whole {shell_word(c.call_id, name)}"))  # fmt: skip
        elif run is not None:
            pair = shell_word(f"{c.call_id}={c.arguments_hash}", name + 1 + len(c.arguments_hash))
            put(out, line(("  approve it: ", "dim"), f"{_command(run, db)} --approve {pair}"))


_ARGUMENT_ROW = "    " + GUTTER  # (a row an argument's long line is wrapped onto)


def _command(run: str, db: str | None = None) -> str:
    """The command, to paste into a shell: the run's id quoted for it (a store from
    elsewhere may hold any id: ``x; rm -rf ~``), as are the call ids after it; with the
    store ``db`` when one was given (pasted, it must not look in the default one)."""
    where = f" --db {shell_word(db, 4_096)}" if db else ""
    return f"loopwright runs approve {shell_word(run)}{where}"


def _footer(run: str, calls: list[DeferredCall], db: str | None) -> str:
    """What the listing ends with: the calls waiting, by tool (the rarest first), and
    how to decide: ``--all`` names the calls shown whole by their digest."""
    whole = [c for c in calls if shown_whole(c.call)]
    cut = [c for c in calls if not shown_whole(c.call)]
    waits = "1 call waits" if len(calls) == 1 else f"{len(calls)} calls wait"
    lines = [f"\n{waits}: {tools_summary(c.call.function for c in calls)}"]
    if whole:
        digest = listing_digest((c.call_id, c.arguments_hash) for c in whole)
        lines.append(
            f"approve the {len(whole)} shown whole above: "
            f"{_command(run, db)} --all --shown {digest}"
        )
    if cut:
        named = ", ".join(f"{as_typed(c.call_id, 60)} ({as_typed(c.call.function, 60)})"
                          for c in cut[:5]) + (" ..." if len(cut) > 5 else "")  # fmt: skip
        lines.append(
            f"{len(cut)} cut above, never approved by --all: {named}; read each whole "
            f"({_command(run, db)} --whole CALL_ID), then approve it: "
            "--approve CALL_ID=ARGUMENTS_HASH"
        )
    lines.append("reject: --reject CALL_ID -m TEXT")
    return "\n".join(lines)


@click.command("approve")
@click.argument("run")
@click.option(
    "--approve",
    "approves",
    multiple=True,
    metavar="CALL_ID=SHA256",
    help="Approve CALL_ID if its arguments hash is SHA256, the one shown (repeatable): the "
    "decision is for the arguments you read, never others.",
)
@click.option("--hash", "hashes", multiple=True, metavar="CALL_ID=SHA256", hidden=True)
@click.option(
    "--reject", "rejects", multiple=True, metavar="CALL_ID", help="Reject this call (repeatable)."
)
@click.option(
    "--message",
    "-m",
    metavar="TEXT",
    help="What the model is told about a rejected call (its error result).",
)
@click.option(
    "--all",
    "all_",
    is_flag=True,
    help="Approve every pending call the listing showed whole (not rejected), named by the "
    "digest it printed (--shown): never a call whose arguments were cut.",
)
@click.option(
    "--shown",
    metavar="SHA256",
    help="With --all: the digest the listing printed of the calls it showed whole.",
)
@click.option(
    "--whole",
    "wholes",
    multiple=True,
    metavar="CALL_ID",
    help="Show this call's arguments whole, however long (repeatable).",
)
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
    shown: str | None = None,
    wholes: tuple[str, ...] = (),
) -> int:
    """Decide about the calls run RUN deferred (its status: waiting).

    Without a decision, show the pending calls (arguments longer than 4,000 characters
    cut in the middle; --whole CALL_ID shows one whole). Each decision is for what was
    shown: --approve CALL_ID=SHA256 approves the call only if its arguments are those
    whose hash the listing showed; --all --shown SHA256 approves the calls the listing
    showed whole, only if the calls waiting are still those (a call cut is never
    approved by --all: read it whole, then approve it by its hash). Decisions are
    recorded all or none; then continue the run: --continue here, `loopwright runs
    resume RUN`, or from Python `lw.resume(RUN, agent=...)`. When it continues, the
    approval policy in force is asked again (a call it denies stays denied).
    """
    from ..runtime._approve import approve, pending_calls, run_id_of

    pinned: dict[str, str] = {}
    for pair in (*approves, *hashes):
        call_id, eq, digest = pair.rpartition("=")  # (a hash has no "=")
        if not eq or not call_id or not digest:
            raise click.BadParameter(
                f"expected CALL_ID=SHA256 (the arguments hash the listing shows: the "
                f"decision is for the arguments read), got {as_typed(pair, MAX_NAME)}",
                param_hint="--approve",
            )
        pinned[call_id] = digest.strip().lower()
    both = sorted(set(pinned) & set(rejects))
    if both:
        raise click.UsageError(f"calls both approved and rejected: {both}")
    if all_ and not shown:
        raise click.UsageError(
            "--all approves the calls a listing showed whole, named by the digest it prints: "
            f"list them ({_command(run, db)}), read them, then give --all --shown DIGEST"
        )
    if shown and not all_:
        raise click.UsageError("--shown goes with --all")
    decide = bool(pinned or rejects or all_)
    if (continue_ or model_args) and not decide:
        raise click.UsageError("--continue goes with a decision (--approve, --reject, --all)")
    if model_args and not continue_:
        raise click.UsageError("-M goes with --continue")
    if wholes and decide:
        raise click.UsageError("--whole shows calls: decide after reading them")
    with reading(db):
        run = run_id_of(run, db)
        waiting = pending_calls(run, db=db)
        if not decide:
            if wholes:
                waiting = _picked(waiting, wholes)
            if as_json:
                click.echo(json_text([c.model_dump(mode="json") for c in waiting]))
                return EXIT_OK
            if not waiting:
                click.echo(f"run {visible(run)} has no call waiting for approval", err=True)
                return EXIT_OK
            print_pending(console(), waiting, run, whole=bool(wholes), db=db)
            if not wholes:
                click.echo(_footer(run, waiting, db), err=True)
            return EXIT_OK
        decided = approve(
            run,
            approve=pinned,
            reject=list(rejects),
            all=all_,
            shown=shown,
            message=message,
            db=db,
        )
    left = [c for c in waiting if all_ and not shown_whole(c.call) and c.call_id not in rejects]
    left = [c for c in left if c.call_id not in pinned]
    for c in left:
        click.echo(
            f"left waiting: call {as_typed(c.call_id, MAX_NAME)} "
            f"({as_typed(c.call.function, MAX_NAME)}): its arguments were cut in the "
            f"listing; read them whole: {_command(run, db)} --whole "
            f"{shell_word(c.call_id, MAX_NAME)}",
            err=True,
        )
    if as_json and not continue_:
        click.echo(json_text([c.model_dump(mode="json") for c in decided]))
        return EXIT_OK
    rejected = set(rejects)
    for c in decided:
        verb = "rejected" if c.call_id in rejected else "approved"
        click.echo(
            f"{verb} call {as_typed(c.call_id, MAX_NAME)} "
            f"({as_typed(c.call.function, MAX_NAME)}), "
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


def _picked(waiting: list[DeferredCall], ids: Sequence[str]) -> list[DeferredCall]:
    """The pending calls of ``ids``, in the order asked (an id not pending is refused)."""
    by_id = {c.call_id: c for c in waiting}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise click.UsageError(f"no call pending with the id {as_typed(missing[0], MAX_NAME)}")
    return [by_id[i] for i in dict.fromkeys(ids)]
