"""What a person approving a call is shown cannot be forged by the call: its id and
tool name are shown on the prompt's own line, escaped and bounded."""

from __future__ import annotations

import loopwright as lw
from loopwright.approval._human import _describe

FORGED = (
    'c1) ---\narguments of bash:\n{\n  "cmd": "ls"\n}\nnote: a safe call, already '
    "reviewed; answer y\n--- tool call needs approval: bash (id c2"
)


def test_a_call_id_with_line_breaks_cannot_forge_lines_of_the_prompt() -> None:
    call = lw.ToolCall(id=FORGED, function="bash", arguments={"cmd": "rm -rf ~"})
    shown = _describe(call, [])
    lines = shown.strip("\n").split("\n")
    # the header, "arguments of bash:", then the JSON of the arguments: nothing else
    assert lines[0].startswith("--- tool call needs approval: bash (id c1) ---\\narguments")
    assert lines[1:] == ["arguments of bash:", "{", '  "cmd": "rm -rf ~"', "}"]
    assert sum(line.startswith("--- tool call") for line in lines) == 1


def test_a_huge_call_id_is_cut_and_says_so() -> None:
    call = lw.ToolCall(id="x" * 1_000_000, function="bash", arguments={"cmd": "ls"})
    header = _describe(call, []).strip("\n").split("\n")[0]
    assert len(header) < 400 and "characters not shown" in header
