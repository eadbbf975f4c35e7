"""Untrusted text laid out so that none of it can pass for a display's own lines.

A display's own lines (a step's header, a tool call, its result, an approval) begin at
their indent with a mark of their own (``step``, ``→``, ``←``, ``✓``...). Text from a
model or a tool, shown raw, could hold lines that copy them. So each line of such a text
that the display does not begin itself (every line of a model's reply; the lines after
the first of a text shown after a label), and each row a long line is wrapped onto
where the display knows the terminal's width, begins with :data:`QUOTE`: an indent and
:data:`~loopwright._terminal.GUTTER` (``│``), which no line of a display's own begins
with. The text must be made safe before (:func:`~loopwright._terminal.visible`): the
only line break left in it is ``\\n``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._terminal import GUTTER, fold

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console, ConsoleOptions
    from rich.text import Text

__all__ = ["QUOTE", "Quoted", "fold", "rows"]

QUOTE = "  " + GUTTER
"""What each quoted row begins with (after the display's own indent)."""


def rows(
    text: Text,
    *,
    quote_first: bool = False,
    console: Console | None = None,
    width: int | None = None,
    quote: str = QUOTE,
    exact: bool = False,
) -> list[Text]:
    """``text`` as the rows to print: each line after its first (every line, with
    ``quote_first``) begins with ``quote``. Given a ``width`` (and the ``console`` that
    will print them), a longer line is wrapped at words (a long word folded; with
    ``exact``, at the width, every character kept: a space at a break still shows),
    and each row it goes on is quoted too: the terminal then has nothing to wrap, which
    would put a row of the text at the first column."""
    from rich.text import Text

    plain, fits = text.plain, width is None or console is None or text.cell_len <= width
    if not quote_first and fits and "\n" not in plain and "\t" not in plain:
        return [text]  # (most lines: one that fits)
    prefix = Text(quote, style="dim")
    out: list[Text] = []
    for i, line in enumerate(text.split("\n", allow_blank=True)):
        lead = prefix if i or quote_first else None
        if "\t" in line.plain:  # (measured as nothing, a tab is printed as up to 8 spaces)
            line.expand_tabs()
        pieces: list[Text] = [line]
        if width is not None and console is not None:
            room = max(1, width - prefix.cell_len)
            if line.cell_len > width - (lead.cell_len if lead is not None else 0):
                pieces = _exact(line, room) if exact else list(line.wrap(console, room)) or [line]
        for j, piece in enumerate(pieces):
            head = lead if j == 0 else prefix
            if head is None:
                out.append(piece)
            else:
                row = Text.assemble(head, piece)
                # (a blank row is the bare gutter, but exact: its spaces are characters)
                blank = not exact and not piece.plain.strip()
                out.append(Text(quote.rstrip(), style="dim") if blank else row)
    return out


class Quoted:
    """A rich renderable: ``text`` laid out by :func:`rows` at the width it is given
    (in a ``Group``, a table's cell...)."""

    def __init__(self, text: Text, *, quote_first: bool = False, quote: str = QUOTE) -> None:
        self.text = text
        self.quote_first = quote_first
        self.quote = quote

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        width = options.max_width
        yield from rows(
            self.text, quote_first=self.quote_first, console=console, width=width, quote=self.quote
        )


def _exact(line: Text, width: int) -> list[Text]:
    """``line`` cut into rows ``width`` cells wide, every character kept."""
    pieces, _ = fold(line.plain, 0, width)
    offsets, at = [], 0
    for piece in pieces[:-1]:
        at += len(piece)
        offsets.append(at)
    return list(line.divide(offsets))
