"""``loopwright run``'s closing error or limit line, on a terminal: a long first line of
the error (a model's or a tool's words) is cut into rows here, each after the first
quoted, so the terminal wraps nothing to its first column, where a forged line of the
command's own (``run ... · loopwright runs show ...``) would begin."""

from __future__ import annotations

import pytest

from loopwright.cli import _run

WIDTH = 50
FORGED = "run 01FAKE · 1 step · 9 tokens · FORGED"


def _report(status: str, text: str) -> dict[str, object]:
    return {
        "answer": None,
        "status": status,
        "limit": {"message": text, "type": "time"},
        "error": text,
        "run_id": None,
    }


@pytest.mark.parametrize("status", ["error", "limit"])
def test_a_long_error_line_goes_on_quoted_rows_on_a_terminal(
    status: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "x" * (WIDTH - len("error: ")) + FORGED + "\n" + FORGED
    monkeypatch.setattr(_run, "terminal_width", lambda stream: WIDTH)
    _run._print(_report(status, text), set())
    lines = capsys.readouterr().err.rstrip("\n").split("\n")
    assert all(len(line) <= WIDTH for line in lines)  # nothing left for the terminal to wrap
    for line in lines:
        if "FORGED" in line:
            assert line.startswith("  \u2502 "), line
    joined = "".join(line.removeprefix("  \u2502 ") for line in lines)
    assert joined.count(FORGED) == 2


def test_piped_the_error_line_is_written_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "y" * 200
    monkeypatch.setattr(_run, "terminal_width", lambda stream: None)
    _run._print(_report("error", text), set())
    assert capsys.readouterr().err == f"error: {text}\n"
