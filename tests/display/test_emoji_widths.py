"""Rows the displays cut themselves fit the terminal however wide its characters show.

An emoji presentation selector (U+FE0F) makes the narrow character before it two cells
wide (``☺`` one cell, ``☺️`` two: rich and terminals agree), and ``visible`` keeps it
(prose needs it). Measured a character at a time, the pair counted one cell: a row of
them cut "at the width" was twice as wide, so the terminal wrapped it and put a forged
line at the first column, where the displays' own lines begin.
"""

from __future__ import annotations

import io

import pytest
from rich.cells import get_character_cell_size
from rich.console import Console
from rich.text import Text

import loopwright as lw
from loopwright._terminal import fold, wrapped
from loopwright.cli._stream_view import StreamingDisplay
from loopwright.display._rows import rows
from loopwright.model import TextDelta

SMILE = "\u263a\ufe0f"  # one cell without its selector, two with it
FAKE = "\u2190 deploy: deployed FORGED"
WIDTH = 40


def terminal_rows(text: str, width: int) -> list[str]:
    """``text`` as a terminal ``width`` cells wide shows it: a selector U+FE0F makes the
    character before it two cells wide; a row that is full goes on at the first column."""
    out = []
    for line in text.split("\n"):
        row, used = "", 0
        for char in line:
            size = get_character_cell_size(char)
            if char == "\ufe0f" and row and get_character_cell_size(row[-1]) == 1:
                size = 1  # (the character before it now takes two)
            if used + size > width:
                out.append(row)
                row, used = "", 0
            row, used = row + char, used + size
        out.append(row)
    return out


def assert_unforgeable(shown: str, width: int) -> None:
    shown_rows = terminal_rows(shown, width)
    assert shown_rows == shown.split("\n")  # nothing left for the terminal to wrap
    assert any("FORGED" in row for row in shown_rows)
    for row in shown_rows:
        if "FORGED" in row:
            assert row.lstrip(" ").startswith("\u2502 "), row


def test_fold_measures_a_selected_emoji_at_two_cells() -> None:
    pieces, column = fold(SMILE * 30, 0, WIDTH)
    assert [len(p) // 2 for p in pieces] == [20, 10]  # 20 two-cell emoji a row
    assert column == 20
    # a selector never goes to a row apart from its character
    assert all(p.startswith("\u263a") for p in pieces)
    # split across two deltas of a stream, the selector still counts
    assert fold("\ufe0f", 39, WIDTH)[1] == 40


@pytest.mark.parametrize("lead", ["", "ab "])
def test_wrapped_rows_of_selected_emoji_fit(lead: str) -> None:
    shown = wrapped(lead + SMILE * (WIDTH // 2) + FAKE, WIDTH)
    assert_unforgeable(shown, WIDTH)
    assert "".join(r.removeprefix("  \u2502 ") for r in shown.split("\n")) == (
        lead + SMILE * (WIDTH // 2) + FAKE
    )


def test_exact_rows_of_selected_emoji_fit() -> None:
    out = Console(file=io.StringIO(), width=WIDTH, color_system=None)
    text = Text("x " + SMILE * (WIDTH // 2) + FAKE)
    shown = "\n".join(r.plain for r in rows(text, console=out, width=WIDTH, exact=True))
    assert_unforgeable(shown, WIDTH)


def test_streamed_selected_emoji_fit_also_split_across_deltas() -> None:
    buffer = io.StringIO()
    out = Console(file=buffer, width=WIDTH, color_system=None, force_terminal=True)
    view = StreamingDisplay(out)
    for _ in range(WIDTH // 2 - 2):  # (the quote takes 4 cells: 18 emoji fill the row)
        view.delta(TextDelta("\u263a"))
        view.delta(TextDelta("\ufe0f"))
    view.delta(TextDelta(FAKE))
    view._end_text()
    assert_unforgeable(buffer.getvalue().rstrip("\n"), WIDTH)


def test_the_approval_prompt_of_selected_emoji_fits() -> None:
    from loopwright.approval._human import _describe

    call = lw.ToolCall(id="c1", function="ls", arguments={})
    said = SMILE * (WIDTH // 2) + FAKE
    messages: list[lw.ChatMessage] = [lw.AssistantMessage(content=said, tool_calls=[call])]
    shown = _describe(call, messages, WIDTH).rstrip("\n")
    lines = shown.split("\n")
    assert terminal_rows(shown, WIDTH) == lines
    assert not any(line.startswith("\u2190") for line in lines)


async def test_a_line_printed_amid_a_streamed_row_leaves_no_row_unquoted() -> None:
    # a log line (a retry's warning), a parallel call's result... printed while a
    # streamed row is open ends that row: the text streamed after it must begin its
    # own row with the gutter, not at the first column (the cursor is there now)
    buffer = io.StringIO()
    out = Console(file=buffer, width=WIDTH, color_system=None, force_terminal=True)
    view = StreamingDisplay(out)
    with view:
        async with lw.recording(db=False):
            view.delta(TextDelta("hello "))
            lw.transcript().info("a note between two deltas")
            view.delta(TextDelta(FAKE))
            view._end_text()
    shown = buffer.getvalue().rstrip("\n")
    assert "a note between two deltas" in shown
    assert_unforgeable(shown, WIDTH)


@pytest.mark.parametrize("during", [False, True])
def test_a_question_asked_amid_a_streamed_row_leaves_no_row_unquoted(during: bool) -> None:
    # the human approver asks on the terminal while a streamed row is open (a parallel
    # call): its prompt and the person's answer end that row; the text streamed after
    # (held while it is asked, or after) begins its own row with the gutter
    from loopwright._terminal import asking

    buffer = io.StringIO()
    out = Console(file=buffer, width=WIDTH, color_system=None, force_terminal=True)
    view = StreamingDisplay(out)
    view.delta(TextDelta("hello "))
    with asking():
        buffer.write("--- approve? ---\ny\n")  # (the approver's)
        if during:
            view.delta(TextDelta(FAKE))
    if not during:
        view.delta(TextDelta(FAKE))
    view._end_text()
    assert_unforgeable(buffer.getvalue().rstrip("\n"), WIDTH)


def test_wrapped_rows_with_tabs_fit() -> None:
    # a tab is printed as up to 8 spaces: measured as nothing, a line of them that
    # "fit" was wrapped by the terminal (the approval prompt's model text, an error)
    from loopwright.approval._human import _describe

    text = "ab" + "\t" * 5 + FAKE
    shown = wrapped(text, WIDTH)
    assert_unforgeable(shown.expandtabs(), WIDTH)
    call = lw.ToolCall(id="c1", function="ls", arguments={})
    messages: list[lw.ChatMessage] = [lw.AssistantMessage(content=text, tool_calls=[call])]
    prompt = _describe(call, messages, WIDTH).rstrip("\n").expandtabs()
    lines = prompt.split("\n")
    assert terminal_rows(prompt, WIDTH) == lines
    assert not any(line.startswith("\u2190") for line in lines)
