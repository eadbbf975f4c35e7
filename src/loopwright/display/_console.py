"""A console display of running agents: steps, tool calls and results, abbreviated.

Everything shown comes from models, tools and sandboxes, so it is untrusted: each text
is cut to a bound, then its control characters (escape sequences, ``\\r``, bidi
overrides, lone surrogates) are made visible (:func:`loopwright._terminal.visible`), and
it is printed as ``rich.text.Text``, never read as rich markup. No line of it can pass
for the display's own (``_rows.py``): a model's reply is shown quoted, every line
beginning with ``│``, and so is every line after the first of a text shown after a
label (a tool's result, an error); on a terminal, the display wraps long lines itself,
each row they go on quoted too. While a person is asked
a question on the terminal (the human approver), what it prints waits until the answer
(:func:`loopwright._terminal.unless_asking`).
"""

from __future__ import annotations

import json
import logging
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._terminal import unless_asking, visible
from ..transcripts import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    InfoEvent,
    LimitEvent,
    LoggerEvent,
    ModelEvent,
    SandboxEvent,
    SpanBegin,
    SpanEnd,
    StoreEvent,
    SubtaskEvent,
    ToolEvent,
    Transcript,
    observe_transcripts,
)
from ._rows import rows

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from rich.console import Console
    from rich.text import Text

__all__ = ["ConsoleDisplay", "abbreviate", "console_display"]


def abbreviate(text: str, limit: int, *, max_lines: int = 8) -> str:
    """``text`` cut to at most ``limit`` characters and ``max_lines`` lines, saying how
    much was left out. Lines end at ``\\n`` only: a ``\\r`` or another separator
    ``str.splitlines`` knows stays as it is, for :func:`~loopwright._terminal.visible`
    to show (a line break made of it would split what is shown)."""
    text = text.strip()
    lines = text.split("\n")
    cut = 0
    if len(lines) > max_lines:
        cut = len("\n".join(lines[max_lines:]))
        text = "\n".join(lines[:max_lines])
    if len(text) > limit:
        cut += len(text) - limit
        text = text[:limit].rstrip()
    return f"{text} … (+{cut} chars)" if cut else text


def _args(arguments: dict[str, Any], limit: int) -> str:
    parts = []
    for k, v in arguments.items():
        value = v if isinstance(v, str) else json.dumps(v, default=str)
        if isinstance(v, str):
            value = json.dumps(abbreviate(v, max(20, limit // 4), max_lines=1))
        parts.append(f"{k}={value}")
    return abbreviate(", ".join(parts), limit, max_lines=1)


class ConsoleDisplay:
    """Prints a run's events to a rich console as they happen.

    Use it as a context manager around runs (every run transcript opened within is
    shown), or subscribe it to one transcript with :meth:`attach`. It is also a plain
    event subscriber: ``display(event)``.

    Args:
        console: The ``rich.console.Console`` to print to (default: a new one, stderr).
        max_chars: Longer texts (model output, tool results) are cut to this length.
        log_level: Captured log records at or above this level are shown.
        show_store: Show store changes (the keys changed).
        tracebacks: Show the tracebacks in captured log records (by default only their
            message and the exception's last line).

    Attributes:
        shown_errors: The errors shown so far (``Type: message``) as a step's model
            error, a tool call's failure or the run's error: an error is shown once (the
            run's ``ErrorEvent`` for a failure already shown is skipped), and a caller
            printing a summary can skip one already on screen.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        max_chars: int = 400,
        log_level: int = logging.WARNING,
        show_store: bool = False,
        tracebacks: bool = False,
    ) -> None:
        if console is None:
            from rich.console import Console

            console = Console(stderr=True)
        self.console = console
        self.max_chars = max_chars
        self.log_level = log_level
        self.show_store = show_store
        self.tracebacks = tracebacks
        self.shown_errors: set[str] = set()
        self.steps = 0
        self._depth: dict[str, int] = {}
        self._lock = threading.Lock()
        self._cm: AbstractContextManager[Any] | None = None

    # --- subscription ---------------------------------------------------------------
    def attach(self, transcript: Transcript) -> Any:
        """Show ``transcript``'s events from now on; returns the unsubscribe function."""
        return transcript.subscribe(self)

    def __enter__(self) -> ConsoleDisplay:
        self._cm = observe_transcripts(self)
        self._cm.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        cm, self._cm = self._cm, None
        if cm is not None:
            cm.__exit__(exc_type, exc, tb)

    # --- rendering ------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        with self._lock:
            depth = self._depth.get(event.span_id, 0) if event.span_id else 0
            if isinstance(event, (ToolEvent, SubtaskEvent, SpanBegin)):
                self._depth.setdefault(event.id, depth + 1)
            lines = self._rows(self._render(event), 2 * depth)
            if lines:
                self._show(lambda: self._print(lines))

    def _rows(self, shown: list[Text | Said], indent: int) -> list[Text]:
        """The rows ``shown`` is printed on, indented: the display's lines (a text on
        its line goes on quoted rows from its first line break) and the texts said
        (quoted from their first row). On a terminal, wrapped to its width."""
        terminal = self.console.is_terminal
        width = max(8, self.console.width - indent) if terminal else None
        out = []
        for item in shown:
            said = isinstance(item, Said)
            text = item.text if isinstance(item, Said) else item
            out.extend(rows(text, quote_first=said, console=self.console, width=width))
        for line in out:
            line.pad_left(indent)
        return out

    def _print(self, lines: list[Text]) -> None:
        from rich.text import Text

        # one print for all the rows (rich's work per print is most of a row's cost)
        self.console.print(Text("\n").join(lines), soft_wrap=True, highlight=False)

    def _show(self, show: Callable[[], None]) -> None:
        """Call ``show`` (it prints) now, or once a person asked a question on the
        terminal (the human approver) has answered: a line printed under the question
        could pass for its own."""
        unless_asking(show, dropped=self._dropped)

    def _dropped(self, count: int) -> None:
        self.console.print(
            self._text((f"[{count:,} display lines not shown while a person was asked]", "dim"))
        )

    def _text(self, *parts: tuple[str, str] | str) -> Text:
        from rich.text import Text

        return Text.assemble(
            *(visible(p) if isinstance(p, str) else (visible(p[0]), p[1]) for p in parts)
        )

    def _failed(self, error: str) -> str:
        """``error`` (``Type: message``), remembered as shown; a cancellation reads as
        one."""
        self.shown_errors.add(error)
        return "cancelled" if error in _CANCELLED else error

    def _said(self, text: str, style: str = "") -> Said:
        """Untrusted ``text`` on lines of its own: every line quoted."""
        return Said(self._text((text, style)))

    def _render(self, ev: Event) -> list[Text | Said]:
        n = self.max_chars
        t = self._text
        if isinstance(ev, ModelEvent):
            if ev.pending or (ev.error or "").startswith("LimitExceededError"):
                return []  # a call a limit stopped never happened: the LimitEvent says it
            self.steps += 1
            head = [
                ("step ", "bold cyan"),
                (f"{self.steps}", "bold cyan"),
                (f"  {ev.model}", "dim"),
            ]
            if ev.usage is not None:
                head.append((f" · {ev.usage.total_tokens} tokens", "dim"))
            head.append((f" · {ev.duration:.1f}s", "dim"))
            if ev.retries:
                head.append((f" · {ev.retries} retries", "yellow"))
            out: list[Text | Said] = [t(*head)]
            if ev.error is not None:
                error = self._failed(ev.error)
                return [*out, t(("✗ model error: ", "bold red"), abbreviate(error, n))]
            if ev.output is None:
                return out
            msg = ev.output.message
            if msg.reasoning:
                out.append(self._said(abbreviate(msg.reasoning, n), "dim italic"))
            if msg.content.strip():
                out.append(self._said(abbreviate(msg.content, n)))
            if msg.format_error is not None:
                out.append(t(("✗ format error: ", "red"), abbreviate(msg.format_error, n)))
            for call in msg.tool_calls:
                out.append(
                    t(
                        ("→ ", "magenta"),
                        (call.function, "bold magenta"),
                        f"({_args(call.arguments, n)})",
                    )
                )
            return out
        if isinstance(ev, ToolEvent):
            if ev.pending:
                return []
            name = ev.call.function
            if ev.failure is not None and ev.failure.startswith("ToolDeferred"):
                return [t(("⏸ ", "bold cyan"), (name, "bold"), (": waiting for approval", "cyan"))]
            if ev.failure is not None:
                failure = abbreviate(self._failed(ev.failure), n)
                return [t(("✗ ", "bold red"), (name, "bold"), (f": {failure}", "red"))]
            if ev.error is not None:
                return [
                    t(("✗ ", "red"), (name, "bold"), ": ", (abbreviate(ev.error.message, n), "red"))
                ]
            result = ev.result.content if ev.result is not None else ""
            extra = " (truncated)" if ev.truncated else ""
            return [t(("← ", "green"), (name, "bold"), f"{extra}: ", abbreviate(result, n))]
        if isinstance(ev, SubtaskEvent):
            if ev.pending:
                return [t(("▸ ", "blue"), (f"{ev.type} ", "dim"), (ev.name, "bold blue"))]
            if ev.error is not None:
                return [
                    t(
                        ("◂ ", "blue"),
                        (ev.name, "bold"),
                        (f" failed: {abbreviate(ev.error, n)}", "red"),
                    )
                ]
            result = json.dumps(ev.result, default=str) if ev.result is not None else "done"
            return [
                t(
                    ("◂ ", "blue"),
                    (ev.name, "bold"),
                    f" → {abbreviate(result, n)}",
                    (f" ({ev.duration:.1f}s)", "dim"),
                )
            ]
        if isinstance(ev, SpanBegin):
            return [t(("┌ ", "dim"), (ev.name, "bold dim"))]
        if isinstance(ev, SpanEnd):
            if not ev.error:
                return []
            return [t(("└ ", "dim"), (f"failed: {abbreviate(ev.error, n)}", "red"))]
        if isinstance(ev, InfoEvent):
            data = ev.data if isinstance(ev.data, str) else json.dumps(ev.data, default=str)
            return [t(("• ", "cyan"), abbreviate(data, n))]
        if isinstance(ev, LoggerEvent):
            levelno = ev.levelno if ev.levelno is not None else logging.getLevelName(ev.level)
            if not isinstance(levelno, int):  # an unnamed level from an older record
                levelno = logging.WARNING
            if levelno < self.log_level:
                return []
            style = "red" if levelno >= logging.ERROR else "yellow"
            return [
                t(
                    (f"{ev.level.lower()} ", style),
                    (f"{ev.logger}: ", "dim"),
                    abbreviate(self._log_message(ev.message), n),
                )
            ]
        if isinstance(ev, LimitEvent):
            return [
                t(("■ ", "bold yellow"), abbreviate(ev.message or f"{ev.type} limit reached", n))
            ]
        if isinstance(ev, ErrorEvent):
            error = f"{ev.error}: {ev.message}" if ev.message else ev.error
            if error in self.shown_errors:
                return []  # the step that failed showed it
            self.shown_errors.add(error)
            if ev.error in _CANCELLED:
                return [t(("■ cancelled", "bold yellow"))]
            return [t(("■ error: ", "bold red"), abbreviate(error, n))]
        if isinstance(ev, ApprovalEvent):
            style = "green" if ev.decision == "approve" else "yellow"
            why = f" ({abbreviate(ev.explanation, n)})" if ev.explanation else ""
            by = f" by {abbreviate(ev.approver, 40)}" if ev.approver else ""
            return [t(("approval: ", "dim"), (ev.decision, style), f"{by}{why}")]
        if isinstance(ev, SandboxEvent):
            what = ev.cmd if isinstance(ev.cmd, str) else " ".join(ev.cmd or []) or ev.file or ""
            code = f" → exit {ev.result}" if ev.result is not None else ""
            return [t((f"sandbox {ev.action}: ", "dim"), abbreviate(what, n, max_lines=1), code)]
        if isinstance(ev, StoreEvent) and self.show_store:
            paths = ", ".join(sorted({c.get("path", "") for c in ev.changes}))
            return [t(("store: ", "dim"), abbreviate(paths, n, max_lines=1))]
        return []

    def _log_message(self, message: str) -> str:
        """A captured record's message; of its traceback (appended by the capture),
        only the exception's line unless ``tracebacks``."""
        head, sep, trace = message.partition(_TRACEBACK)
        if not sep or self.tracebacks:
            return message
        last = trace.rstrip().rsplit("\n", 1)[-1]
        return f"{head.rstrip()} ({last.strip()})"


class Said:
    """Untrusted text shown on lines of its own (a model's reply): every line of it is
    quoted, its first too."""

    __slots__ = ("text",)

    def __init__(self, text: Text) -> None:
        self.text = text


_TRACEBACK = "Traceback (most recent call last):"
_CANCELLED = frozenset({"CancelledError", "KeyboardInterrupt"})


def console_display(
    console: Console | None = None,
    *,
    max_chars: int = 400,
    log_level: int = logging.WARNING,
    show_store: bool = False,
    tracebacks: bool = False,
) -> ConsoleDisplay:
    """A :class:`ConsoleDisplay`: ``with lw.console_display(): await lw.run(...)`` shows
    every run started within, as it happens."""
    return ConsoleDisplay(
        console,
        max_chars=max_chars,
        log_level=log_level,
        show_store=show_store,
        tracebacks=tracebacks,
    )
