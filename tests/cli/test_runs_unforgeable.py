"""``runs show`` and ``runs approve``: no line a model or a tool wrote can pass for the
listing's own. Every line of a recorded text after its first, and each row a long line
is wrapped onto, begins with the gutter ``│`` (``display/_rows.py``)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import loopwright as lw
from loopwright.cli._approve import print_pending
from loopwright.log._approvals import DeferredCall
from tests.cli._cli import cli, script
from tests.display.test_unforgeable import assert_unforgeable, terminal_rows

# lines copying runs show's own (a message, a tool call, its failure) and runs approve's
FAKES = [
    "  tool      the deploy went fine",
    "  assistant I will now deploy",
    '    → deploy({"target": "prod"})',
    "      raised nothing",
    "traceback",
    "call c2  tool read_file  deferred by policy",
    "  arguments hash: 0000",
]
FORGED = "\n".join(f"{fake} FORGED" for fake in FAKES)


def test_runs_show_quotes_every_line_of_a_recorded_text(tmp_path: Path) -> None:
    said = {"message": {"content": "first line\n" + FORGED, "reasoning": "hm\n" + FORGED}}
    cli("run", "go\n" + FORGED, "-m", "mock", "-M", script(tmp_path / "s.json", [said]),
        "-q", cwd=tmp_path)  # fmt: skip
    detail = cli("runs", "show", "--detail", cwd=tmp_path, columns=None)  # (piped)
    assert detail.code == 0, detail.err
    rows = detail.out.splitlines()
    assert_unforgeable(rows)
    for fake in FAKES:  # and each line still reads, after the gutter, under its text
        assert f"          │ {fake} FORGED" in rows
    assert "  assistant hm" in rows and "          │ first line" in rows


def test_runs_show_wraps_a_long_line_on_quoted_rows(tmp_path: Path) -> None:
    width = 60
    line = "x" * (width - len("  assistant ")) + "  tool      the deploy went fine FORGED"
    said = {"message": {"content": line}}
    cli("run", "go", "-m", "mock", "-M", script(tmp_path / "s.json", [said]), "-q", cwd=tmp_path)
    shown = cli("runs", "show", cwd=tmp_path, columns=str(width))  # (a console 60 wide)
    assert shown.code == 0, shown.err
    rows = terminal_rows(shown.out, width)
    assert rows == shown.out.splitlines()  # nothing left for the terminal to wrap
    assert_unforgeable(rows)


def test_runs_approve_wraps_a_long_argument_on_quoted_rows_on_a_terminal() -> None:
    width = 60
    command = "echo " + "x" * (width - len('      "cmd": "echo ')) + FAKES[5] + " FORGED"
    call = lw.ToolCall(id="c1", function="bash", arguments={"cmd": command})
    pending = DeferredCall(call=call, arguments_hash="0" * 64, state="pending", created=0.0)
    for terminal in (True, False):
        buffer = io.StringIO()
        out = Console(file=buffer, width=width, force_terminal=terminal, color_system=None)
        print_pending(out, [pending])
        rows = buffer.getvalue().splitlines()
        if terminal:
            assert terminal_rows(buffer.getvalue(), width) == rows
            # (wrapped by the terminal, a row began with the fake call: at the 61st cell)
            assert not any(row.lstrip(" ").startswith("call c2") for row in rows)
            hexadecimal = set("0123456789abcdef")  # (the hash's end: rich wraps it, its own)
            for row in rows:
                assert row.startswith(("call c1", "  ", "    │ ")) or set(row) <= hexadecimal
            joined = "".join(row.removeprefix("    │ ") for row in rows)
            assert f'      "cmd": "{command}"' in joined  # all of it, in order, spaces too
        else:  # piped: each line whole, to be copied as it is
            assert f'      "cmd": "{command}"' in rows


def test_loopwright_run_quotes_a_multi_line_error(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", [{"error": "down\n" + FORGED}])
    for quiet in ((), ("-q",)):  # the live display's lines, or the error line at the end
        r = cli("run", "go", "-m", "mock", "-M", outputs, *quiet, cwd=tmp_path)
        assert r.code != 0
        assert_unforgeable(r.err.splitlines())
        assert any(row.startswith(("error: ", "✗ model error: ")) for row in r.err.splitlines())
