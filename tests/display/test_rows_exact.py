"""``rows(..., exact=True)`` (``runs approve``'s arguments on a terminal) keeps every
character, the spaces of a row that holds nothing else too: a person approving reads
the argument as it will run (a run of spaces in a script's text, its indentation)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from loopwright.display._rows import rows

QUOTE = "    \u2502 "


@pytest.mark.parametrize("spaces", [1, 39, 100])
def test_a_row_of_spaces_is_kept_whole(spaces: int) -> None:
    out = Console(file=io.StringIO(), width=40)
    line = '    "cmd": "a' + " " * spaces + 'b"'
    shown = [r.plain for r in rows(Text(line), console=out, width=40, exact=True, quote=QUOTE)]
    assert all(len(row) <= 40 for row in shown)
    assert "".join(row.removeprefix(QUOTE) for row in shown) == line
