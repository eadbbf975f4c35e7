"""``loopwright runs show``: a run (or a sample) and its conversation.

A tool call that raised is shown with its error, not with the "Not run" text the agent
closed the conversation with; ``--detail`` adds every text in full and the traceback.
The model's thoughts (``reasoning``) are shown above its text. Every line of a recorded
text after its first (and each row a long line is wrapped onto) begins with the gutter
``│`` under the text's column (``display/_rows.py``), so that no line a model or a tool
wrote can pass for this listing's own (a fake tool result, a fake message).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .._terminal import GUTTER, json_text, shell_word
from ._options import EXIT_OK, db_option, json_option
from ._views import cells, console, line, put, reading, result, run_error, short, when

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ..log import RunInfo, RunLog, SampleInfo
    from ..model import ChatMessage

__all__ = ["show_command"]

_QUOTE = " " * 10 + GUTTER  # (a text's lines after the first, under its first)
_CANCELLED = ("CancelledError", "KeyboardInterrupt")


@click.command("show")
@click.argument("run", required=False)
@click.option("--sample", help="Show this sample's conversation (an id or key).")
@click.option(
    "--detail",
    "-v",
    is_flag=True,
    help="Show every text in full, and the traceback of an error (a tool call that "
    "raised, a failed run or sample).",
)
@db_option
@json_option
def show_command(
    run: str | None, sample: str | None, detail: bool, db: str | None, as_json: bool
) -> int:
    """Show a run: how it ended, its conversation, its samples and scores.

    RUN is a run id, a unique prefix of one, or an exported JSON file; default: the
    latest run.
    """
    from ..log import load_run

    with reading(db), load_run(run, db=db) as log:
        info = log.info
        samples = log.samples
        messages = log.messages(sample)
        if as_json:
            data = {
                "run": info.model_dump(mode="json"),
                "samples": [s.model_dump(mode="json") for s in samples],
                "messages": [m.model_dump(mode="json") for m in messages],
            }
            if info.status == "waiting" and not samples:  # the calls it waits for
                from ..log._approvals import deferred_calls

                data["pending"] = [c.model_dump(mode="json") for c in deferred_calls(db, info.id)]
            click.echo(json_text(data))
            return EXIT_OK
        failures, tracebacks = _failures(log, sample)
        out = console()
        _header(out, info, detail)
        if info.status == "waiting" and samples:  # an eval's samples wait (evals/)
            waiting = sum(1 for s in samples if s.status == "waiting")
            out.print()
            out.print(line(("waiting for approval", "bold cyan"), f" ({waiting} samples)"))
            _put(out, line("  continue them: ", f"loopwright runs resume {shell_word(info.id)}"))
        elif info.status == "waiting":  # deferred approval (cli/_approve.py)
            _waiting(out, info.id, db)
        if messages:
            out.print()
            out.print(line((f"sample {short(sample)}" if sample else "conversation", "bold")))
            _conversation(out, messages, failures, detail)
        if tracebacks:
            out.print()
            if detail:
                for trace in tracebacks:
                    out.print(line(("traceback", "bold")))
                    put(out, line((short(trace, None), "red")), said=True)
            else:
                out.print(line(("(--detail shows the traceback)", "dim")))
        if samples:
            out.print()
            out.print(_samples(samples))
    return EXIT_OK


def _put(out: Console, text: Text) -> None:
    put(out, text, quote=_QUOTE)


def _failures(log: RunLog, sample: str | None) -> tuple[dict[str, str], list[str]]:
    """The tool calls that raised (call id -> ``Type: message``) and the tracebacks of
    the errors that ended the run or sample, from its events."""
    from ..transcripts import ErrorEvent, ToolEvent

    failures: dict[str, str] = {}
    tracebacks: list[str] = []
    for ev in log.events(sample):
        if isinstance(ev, ToolEvent) and ev.failure is not None:
            failures[ev.call.id] = ev.failure
        elif isinstance(ev, ToolEvent):  # (a call run again later: resumed, or approved)
            failures.pop(ev.call.id, None)
        elif isinstance(ev, ErrorEvent) and ev.traceback and ev.error not in _CANCELLED:
            tracebacks.append(ev.traceback)
    return failures, tracebacks


def _failure(failure: str) -> str:
    if failure in _CANCELLED:
        return "cancelled: the run was interrupted while this call ran"
    if failure.startswith("ToolDeferred"):
        return "deferred: waiting for approval (loopwright runs approve)"
    return f"raised {failure}"


def _waiting(out: Console, run_id: str, db: str | None) -> None:
    from ..log._approvals import deferred_calls
    from ._approve import print_pending

    calls = [c for c in deferred_calls(db, run_id) if c.state != "applied"]
    out.print()
    out.print(line(("waiting for approval", "bold cyan"), f" ({len(calls)} calls)"))
    print_pending(out, calls, run_id, db=db)  # (a call cut: how to read it whole)


def _header(out: Console, info: RunInfo, detail: bool) -> None:
    def text(value: Any, limit: int) -> str:
        return short(value, None if detail else limit)

    _put(out, line((f"run {short(info.id, None)}", "bold"), "  ", short(info.name)))
    fields = [
        ("model", short(info.model)),
        (
            "status",
            ("waiting for approval" if info.status == "waiting" else short(info.status))
            + (f", resumed {info.resumes}x" if info.resumes else ""),
        ),
        ("created", when(info.created)),
        ("finished", when(info.finished)),
        ("input", text(info.input, 200)),
        ("error", text(run_error(info), 400)),
        ("limit", short(info.limit.get("message")) if info.limit else ""),
    ]
    if isinstance(info.output, dict) and "metrics" in info.output:
        fields.append(("metrics", short(result(info), 400)))
    elif info.output is not None:
        fields.append(("output", text(info.output, 400)))
    versions = info.metadata.get("versions")  # agents/_version.py, recorded by run()
    if isinstance(versions, dict) and versions:
        listed = ", ".join(f"{k} {v}" for k, v in sorted(versions.items(), key=str))
        fields.append(("versions", text(listed, 400)))
    origin, until = info.metadata.get("replay_of"), info.metadata.get("until")  # lw.replay
    if isinstance(origin, str):
        fork = f", forked after step {until}" if isinstance(until, int) else ""
        fields.append(("replay of", short(origin) + fork))
    for key, value in fields:
        if value:
            _put(out, line("  ", (f"{key:<9}", "dim"), " ", value))


def _conversation(
    out: Console, messages: list[ChatMessage], failures: dict[str, str], detail: bool
) -> None:
    from ..model import AssistantMessage, ToolMessage

    n, args_n = (None, None) if detail else (300, 200)
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}

    def text(value: Any, limit: int | None) -> str:
        return short(value, limit)

    for m in messages:
        role = line("  ", (f"{m.role:<9}", "cyan"), " ")
        if isinstance(m, ToolMessage) and m.tool_call_id in failures:
            role.append(text(_failure(failures[m.tool_call_id]), n), style="red")
            _put(out, role)
            continue
        if isinstance(m, AssistantMessage) and m.reasoning and m.reasoning.strip():
            _put(out, line(role, (text(m.reasoning, n), "dim italic")))
            role = line(_QUOTE)
        role.append(text(m.text, n))
        _put(out, role)
        for call in getattr(m, "tool_calls", None) or []:
            _put(out, line("    → ", short(call.function), f"({text(call.arguments, args_n)})"))
            if call.id in failures and call.id not in answered:
                _put(out, line("      ", (text(_failure(failures[call.id]), n), "red")))


def _samples(samples: list[SampleInfo]) -> Any:
    from rich.table import Table

    table = Table(title="samples", title_justify="left", show_edge=False, header_style="bold")
    for column in ("id", "epoch", "status", "scores", "answer / error"):
        table.add_column(column)
    for s in samples:
        scores = ", ".join(
            f"{k} {v.get('value')}" if isinstance(v, dict) else f"{k} {v}"
            for k, v in (s.scores or {}).items()
        )
        answer = short(s.error, 50) or short(_answer_text(s.output), 50)
        table.add_row(*cells(short(s.id), str(s.epoch), short(s.status), short(scores, 40), answer))
    return table


def _answer_text(output: Any) -> Any:
    """The text of a recorded ``ModelOutput``, else the output as recorded."""
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        return output["message"].get("content")
    return output
