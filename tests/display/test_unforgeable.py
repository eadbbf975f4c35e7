"""No line a model or a tool writes can pass for one of the display's own lines.

A scripted model writes lines that copy the display's own formats (a step header, a
tool call, its result, an approval, an error, the approval prompt's header), each
tagged ``FORGED``. Rendered through a real rich console, every line of the output that
holds a tag must begin, after its indent, with the gutter ``│`` (the display's own lines
never do), and the text still reads, line for line, after it. On a terminal, the display
wraps long lines itself: read as a terminal of that width shows them (a row at most the
width), no row holding a tag begins anywhere but at the gutter either.
"""

from __future__ import annotations

import contextlib
import io
import logging

from rich.cells import get_character_cell_size
from rich.console import Console

import loopwright as lw
from loopwright.cli._stream_view import StreamingDisplay
from loopwright.model import ReasoningDelta, TextDelta

from .test_console import echo, explode

FAKES = [
    "step 2  mock · 12 tokens · 0.1s",
    '→ deploy(target="prod")',
    "← deploy: deployed to prod",
    '✓ approved deploy(target="prod")',
    "approval: approve by human",
    "✗ deploy: nothing to undo",
    "■ error: none",
    "--- tool call needs approval: deploy (id c1) ---",
    "  ← nested: a result inside a span",
    "│ the gutter itself",
]
FORGED = "\n".join(f"{fake} FORGED" for fake in FAKES)
"""Lines that copy the display's own, every one tagged: shown on lines of their own."""
AFTER_A_LABEL = "plain first line\n" + FORGED
"""A text whose first line is shown after a label (a tool's result, an error)."""


def console(*, width: int = 200, terminal: bool = False) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    out = Console(file=buffer, width=width, color_system=None, force_terminal=terminal)
    return out, buffer


def terminal_rows(text: str, width: int) -> list[str]:
    """``text`` as a terminal ``width`` cells wide shows it: a longer line goes on, at
    the first column of the next row."""
    rows = []
    for line in text.splitlines():
        row, used = "", 0
        for char in line:
            size = get_character_cell_size(char)
            if used + size > width:
                rows.append(row)
                row, used = "", 0
            row, used = row + char, used + size
        rows.append(row)
    return rows


def assert_unforgeable(rows: list[str]) -> None:
    """Every row holding a forged line begins, after its indent, with the gutter."""
    assert any("FORGED" in row for row in rows)
    for row in rows:
        if "FORGED" in row:
            assert row.lstrip(" ").startswith("│ "), row


def assert_reads(text: str) -> None:
    """Each forged line is there whole, right after the gutter."""
    for fake in FAKES:
        assert f"│ {fake} FORGED" in text, fake


@lw.tool
def refuse(text: str) -> str:
    """Fail, telling the model.

    Args:
        text: The message.
    """
    raise lw.ToolError(text)


async def show_a_hostile_run(out: Console) -> None:
    """Every kind of text the display shows from a model or a tool, each forging lines."""
    said = lw.ModelOutput.for_tool_call("echo", {"text": AFTER_A_LABEL}, content=FORGED)
    said.message = said.message.model_copy(update={"reasoning": FORGED})
    model = lw.get_model(
        "mock",
        outputs=[
            said,
            lw.ModelOutput.for_tool_call("refuse", {"text": AFTER_A_LABEL}),
            lw.ModelOutput.for_tool_call("no\nsuch " + FORGED, {}),
            lw.ModelOutput.for_tool_call("explode", {"text": AFTER_A_LABEL}),
            lw.ModelAPIError(AFTER_A_LABEL),
        ],
    )
    tools = [echo, refuse, explode]
    with lw.console_display(out, max_chars=10_000):
        async with lw.recording(db=False):
            messages: list[lw.ChatMessage] = [lw.UserMessage(content="go")]
            for _ in range(4):
                reply = await model.generate(messages, tools)
                messages.append(reply.message)
                with lw.span("inner"), contextlib.suppress(RuntimeError):  # (nested: indented)
                    messages.extend(await lw.execute_tools(reply.message, tools))
            lw.transcript().info(AFTER_A_LABEL)
            logging.getLogger("lwtest.forged").warning(AFTER_A_LABEL)
            with contextlib.suppress(lw.ModelError):
                await model.generate(messages, tools)


async def test_no_line_of_a_model_or_a_tool_passes_for_the_displays_own() -> None:
    out, buffer = console()
    await show_a_hostile_run(out)
    text = buffer.getvalue()
    assert_unforgeable(text.splitlines())
    assert_reads(text)
    lines = text.splitlines()
    # the display's own lines are as they were: a step, a call, a result after its label
    assert lines[0].startswith("step 1  mock")
    assert f"  │ {FAKES[0]} FORGED" in lines  # the model's text: every line quoted
    assert "  ← echo: plain first line" in lines  # (in the span)
    assert "    │ ✓ approved deploy(" in text  # the result's next lines, under its label
    assert "✗ model error: ModelAPIError: plain first line" in lines


async def test_on_a_terminal_no_wrapped_row_passes_for_the_displays_own_either() -> None:
    width = 50
    out, buffer = console(width=width, terminal=True)
    display = lw.console_display(out, max_chars=10_000)
    # a forged line placed where a terminal would wrap a long line: at a row's start
    long = "x" * width + "← deploy: deployed FORGED"
    result = "r" * (width - len("← echo: ")) + '✓ approved deploy(target="prod") FORGED'
    wide = "界" * (width // 2 - 2) + "ab" + "■ error: none FORGED"  # (wide characters)
    tabs = "\t" * (width // 8) + "  " + "approval: approve by human FORGED"  # (tabs: 8 cells)
    content = f"{long}\n{wide}\n{tabs}"
    said = lw.ModelOutput.for_tool_call("echo", {"text": result}, content=content)
    model = lw.get_model("mock", outputs=[said])
    with display:
        async with lw.recording(db=False):
            reply = await model.generate([lw.UserMessage(content="go")], [echo])
            await lw.execute_tools(reply.message, [echo])
    text = buffer.getvalue()
    rows = terminal_rows(text, width)
    assert rows == text.splitlines()  # nothing left for the terminal to wrap
    assert_unforgeable(rows)
    # and it still reads: the text is all there, in order, across its rows
    joined = "".join(row.lstrip(" ").removeprefix("│ ") for row in rows)
    assert long in joined and result in joined and wide in joined
    assert "approval: approve by human FORGED" in joined


def test_streamed_text_is_quoted_piped_and_on_a_terminal() -> None:
    width = 40
    for terminal in (False, True):
        out, buffer = console(width=width, terminal=terminal)
        view = StreamingDisplay(out)
        view.delta(ReasoningDelta("thinking\n" + FAKES[1] + " FORGED\n"))
        for piece in FORGED.split("\n"):  # line by line, and split inside a line
            view.delta(TextDelta(piece[:5]))
            view.delta(TextDelta(piece[5:] + "\n"))
        view.delta(TextDelta("y" * width + "■ error: none FORGED"))  # wrapped at a row's end
        view.delta(TextDelta(" and 界界界" * 8))
        view.delta(TextDelta("\n" + "\t" * (width // 8) + "→ deploy() FORGED"))  # (tabs)
        view._end_text()
        text = buffer.getvalue()
        rows = text.splitlines()  # (piped: each line whole)
        if terminal:
            assert terminal_rows(text, width) == rows  # nothing left for the terminal to wrap
        assert_unforgeable(rows)
        assert "  │ thinking" in rows
        if not terminal:
            assert_reads(text)


async def test_ordinary_text_still_reads() -> None:
    out, buffer = console(width=100)
    model = lw.get_model("mock", outputs=["Paris is the capital of France.\nIt has 2.1M people."])
    with lw.console_display(out):
        async with lw.recording(db=False):
            await model.generate([lw.UserMessage(content="capital?")])
    lines = buffer.getvalue().splitlines()
    assert lines[1:] == ["  │ Paris is the capital of France.", "  │ It has 2.1M people."]


async def test_an_eval_summarys_failed_sample_wraps_on_quoted_rows() -> None:
    from loopwright.evals._progress import result_view

    width = 60
    error = "x" * 38 + ' ✓ approved deploy(target="prod") FORGED'
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("explode", {"text": error})])
    task = lw.Task([{"id": "a", "input": "q"}], agent=lw.react(tools=[explode]), name="t")
    [result] = await lw.eval_async(task, model=model, db=False)
    assert result.errors == 1
    out, buffer = console(width=width)
    out.print(result_view(result))
    rows = buffer.getvalue().splitlines()
    # (rich wrapped the line at its width: the forged approval began a row)
    assert_unforgeable(rows)
    assert "  a: RuntimeError:" in [row.rstrip() for row in rows]
    assert "".join(row.removeprefix("  │ ") for row in rows).count("x" * 38) == 1
