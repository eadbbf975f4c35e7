"""What ``loopwright runs`` prints with: a console, and recorded values as safe text.

Everything in the run store came from models, tools, sandboxes and datasets: it is
untrusted. It is printed as ``rich.text.Text`` on a console with markup and emoji off,
after :func:`~loopwright._terminal.visible` (no escape sequence, ``\\r`` or bidi override
reaches the terminal, and a lone surrogate cannot make printing fail).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._terminal import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ..log import RunInfo

__all__ = [
    "PIPE_WIDTH",
    "cells",
    "cli_text",
    "console",
    "line",
    "put",
    "reading",
    "result",
    "run_error",
    "short",
    "when",
]

PIPE_WIDTH = 100_000
"""The console width when stdout is not a terminal (and ``$COLUMNS`` is not set): a table
or line is as wide as it is, not cut or wrapped at 80 columns."""


def cli_text(text: str) -> str:
    """A library message as the command line says it: ``db=`` is ``--db`` here, and
    whatever the message quotes (a model's or a server's words) is made visible."""
    return visible(text.replace("pass db=", "pass --db"))


@contextlib.contextmanager
def reading(db: str | None) -> Iterator[None]:
    """Within: a run store that SQLite finds damaged is one clear error naming it."""
    from ..log import RunStoreError, default_db_path

    try:
        yield
    except sqlite3.DatabaseError as ex:
        where = str(db) if db else str(default_db_path())
        raise RunStoreError(
            f"the run store {where!r} cannot be read ({ex}); the file may be damaged"
        ) from ex


def console() -> Console:
    """A console on stdout that reads no markup or emoji codes; as wide as the terminal,
    or (piped) as wide as the text."""
    from rich.console import Console

    out = Console(highlight=False, markup=False, emoji=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(highlight=False, markup=False, emoji=False, width=PIPE_WIDTH)
    return out


def when(t: datetime | None) -> str:
    return t.astimezone().strftime("%Y-%m-%d %H:%M:%S") if t is not None else ""


def short(value: Any, n: int | None = 60) -> str:
    """``value`` as safe text on one line, at most ``n`` characters (``None``: all of
    it, with its lines)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if n is None:
        return visible(text.strip())
    # bounded before the work on it (a field may be huge); a \r is shown, not a space
    text = " ".join(visible(text[: 4 * n + 64]).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def line(*parts: str | tuple[str, str] | Text) -> Text:
    """A line of text from ``(text, style)`` parts, the texts taken as they are (give
    them through :func:`short`), never read as markup."""
    from rich.text import Text

    return Text.assemble(*parts)


def put(
    out: Console, text: Text, *, said: bool = False, quote: str | None = None, exact: bool = False
) -> None:
    """Print ``text`` (a line of the listing's own, with a recorded text in it): its
    lines after the first (all of them if ``said``: a recorded text on lines of its
    own), and each row a line longer than the console is wrapped onto, begin with
    ``quote`` (default: ``display._rows.QUOTE``), which holds the gutter ``│`` that no
    line of the listing's own begins with: no line a model or a tool wrote can pass for
    one. ``exact``: wrapped only on a terminal (piped, each line is written whole, to
    be copied), at its width, every character kept (a space at a row's end shows)."""
    from ..display._rows import QUOTE, rows

    width = None if exact and not out.is_terminal else out.width
    quote = QUOTE if quote is None else quote
    for row in rows(text, quote_first=said, console=out, width=width, quote=quote, exact=exact):
        out.print(row, soft_wrap=True)


def cells(*values: str) -> list[Text]:
    """Table cells from texts (given through :func:`short`), never read as markup."""
    from rich.text import Text

    return [Text(v) for v in values]


def money(cost: float | None, unpriced_calls: int = 0) -> str:
    """A run's cost as a listing shows it: ``$0.0123``; ``≥$0.0123`` when some of its
    calls had no known price; ``unknown`` when none had one; ``$0`` for no calls."""
    if cost is None:
        return "unknown" if unpriced_calls else ""
    text = f"${cost:.4f}" if cost < 100 else f"${cost:,.2f}"
    return ("≥" + text) if unpriced_calls else text


def result(info: RunInfo, n: int | None = None) -> str:
    """What a listing shows of a run's outcome: its answer, its error, or an eval's
    metrics with how many samples they are over and how many failed (``match accuracy
    1.000 (1/5 scored, 4 errors)``; ``-`` for a metric no sample was scored for). An
    eval's metrics are cut first to fit ``n`` characters: the counts always show."""
    out: Any = info.output
    if isinstance(out, dict) and isinstance(out.get("metrics"), dict):
        summary = _eval_summary(out, n)
        if summary or not info.error:
            return summary
    if info.error:
        return run_error(info)
    if out is None:
        return ""
    return out if isinstance(out, str) else json.dumps(out, default=str)


def run_error(info: RunInfo) -> str:
    """The run's error as shown (``""`` for none, or for a plain interruption)."""
    if info.status == "cancelled" and info.error in ("CancelledError", "KeyboardInterrupt"):
        return ""
    return info.error or ""


def _eval_summary(out: dict[str, Any], n: int | None) -> str:
    """An eval run's stored output (``metrics``, ``scored``, ``total``, ``errors``, and
    ``stopped`` / ``waiting`` when any) in one line of at most ``n`` characters; ``""``
    when no sample ran."""
    parts = []
    for scorer, metrics in out["metrics"].items():
        for name, value in (metrics if isinstance(metrics, dict) else {}).items():
            if name == "stderr":
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            parts.append(f"{scorer} {name} {value:.3f}" if number else f"{scorer} {name} -")
    text = ", ".join(parts)
    counts = [out.get(k) for k in ("scored", "total", "errors", "completed")]
    if not all(isinstance(n, int) for n in counts):  # a store from before the counts
        return text
    scored, total, errors, completed = counts
    if not completed and not text:
        return ""
    tally = f"{scored}/{total} scored" if parts else f"{completed}/{total} ran"
    tally += f", {errors} errors" if errors != 1 else ", 1 error"
    for key in ("stopped", "waiting"):  # (counted by stores from this version on)
        count = out.get(key)
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            tally += f", {count} {key}"
    if not text:
        return tally
    room = None if n is None else n - len(tally) - 3
    if room is not None and len(text) > room:
        text = short(text, max(room, 1))
    return f"{text} ({tally})"
