"""``loopwright runs replay``'s difference lines on a terminal: a long recorded or
replayed text is cut into quoted rows, so the terminal wraps no row of it to the first
column, where a forged ``  replayed: ...`` line (the same as the recorded one) would
begin."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

import loopwright as lw
from loopwright.cli import _replay
from loopwright.cli._main import cli

from .test_runs_replay import agent_file

WIDTH = 60
FORGED = "  replayed: the same FORGED"


def test_a_long_difference_goes_on_quoted_rows_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    hostile = "x" * (WIDTH - len("  recorded: ")) + FORGED
    spec = agent_file(tmp_path, hostile)
    from loopwright._imports import import_file

    agent = import_file(Path(spec.rpartition(":")[0]), "test_replay_rows_agent_").agent
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "3"})])
    state = asyncio.run(lw.run(agent, "1+2?", model=model, db=db))
    assert state.run_id is not None
    other = agent_file(tmp_path, "You add, carefully.")
    monkeypatch.setattr(_replay, "terminal_width", lambda stream: WIDTH)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(
        cli, ["runs", "replay", state.run_id, "--agent", other, "--db", str(db)]
    )
    lines = done.output.rstrip("\n").split("\n")
    assert any("differs at" in line for line in lines), done.output
    assert all(len(line) <= WIDTH for line in lines)  # nothing left for the terminal to wrap
    for line in lines:
        if "FORGED" in line:
            assert line.startswith("  \u2502 "), line
