"""``diff_runs`` / ``loopwright runs diff``: two recorded runs compared step by step."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

import loopwright as lw
from tests.cli._cli import cli

from ._scripted import hand_loop, script


async def record(db: Path, outputs: list[lw.ModelOutput | str], sample: str | None = None) -> str:
    async with lw.recording(db=db) as rec:
        if sample is None:
            await hand_loop(lw.get_model("mock", outputs=outputs))
        else:
            async with rec.sample(sample):
                await hand_loop(lw.get_model("mock", outputs=outputs))
    return rec.run_id


async def test_the_same_script_gives_no_divergence(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    a, b = await record(db, script(4)), await record(db, script(4))
    d = lw.diff_runs(a, b, db=db)
    assert d.divergence is None and d.same
    assert d.steps_a == d.steps_b == 4


async def test_a_different_tool_call_is_found_at_its_step(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    changed = script(5)
    changed[2] = lw.ModelOutput.for_tool_call("add", {"a": 2, "b": 40}, content="step 2")
    a, b = await record(db, script(5)), await record(db, changed)
    d = lw.diff_runs(a, b, db=db)
    assert d.divergence is not None
    assert (d.divergence.step, d.divergence.kind) == (2, "tool_calls")
    assert '"b": 1' in d.divergence.a and '"b": 40' in d.divergence.b
    assert d.divergence.describe() == "step 3: the tool calls differ"


async def test_different_text_and_different_lengths(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    texty = script(3)
    texty[1] = lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 1}, content="other words")
    a, b, c = await record(db, script(3)), await record(db, texty), await record(db, script(5))
    d = lw.diff_runs(a, b, db=db)
    assert d.divergence is not None and (d.divergence.step, d.divergence.kind) == (1, "text")
    # a run that goes on longer diverges where the shorter one answered
    d = lw.diff_runs(a, c, db=db)
    assert d.divergence is not None and d.divergence.step == 2
    assert d.steps_a == 3 and d.steps_b == 5


async def test_samples_of_two_evals_in_two_stores(tmp_path: Path) -> None:
    db1, db2 = tmp_path / "one.db", tmp_path / "two.db"
    a = await record(db1, script(3), sample="s1")
    changed = script(3)
    changed[0] = lw.ModelOutput.for_tool_call("add", {"a": 9, "b": 1}, content="step 0")
    b = await record(db2, changed, sample="s1")
    d = lw.diff_runs(a, b, db=db1, db_b=db2, sample="s1")
    assert d.divergence is not None and (d.divergence.step, d.divergence.kind) == (0, "tool_calls")


async def test_the_command_line_exit_code_and_hostile_text(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    hostile = script(2)
    hostile[0] = lw.ModelOutput.for_tool_call("add", {"a": 0, "b": 1}, content="\x1b[31mred\x07")
    a, b, c = await record(db, script(2)), await record(db, script(2)), await record(db, hostile)
    same = cli("runs", "diff", a, b, "--db", str(db), cwd=tmp_path)
    assert same.code == 0, same.err
    assert "the steps are the same" in same.out
    differ = cli("runs", "diff", a, c, "--db", str(db), cwd=tmp_path)
    assert differ.code == 0, differ.err
    assert cli("runs", "diff", a, c, "--db", str(db), "--exit-code", cwd=tmp_path).code == 4
    assert cli("runs", "diff", a, b, "--db", str(db), "--exit-code", cwd=tmp_path).code == 0
    assert "diverge at step 1: the model's text differ" in differ.out
    assert "red" in differ.out and "\x1b" not in differ.out and "\x07" not in differ.out
    as_json = cli("runs", "diff", a, c, "--db", str(db), "--json", cwd=tmp_path)
    assert json.loads(as_json.out)["divergence"]["kind"] == "text"
    missing = cli("runs", "diff", a, "nosuchrun", "--db", str(db), cwd=tmp_path)
    assert missing.code == 1
    assert "nosuchrun" in missing.err


async def test_two_evals_are_not_the_same_for_want_of_a_sample(tmp_path: Path) -> None:
    """An eval's steps are its samples': compared without saying which sample, two evals
    that differ were "the same" (no step on either side) and --exit-code said 0."""
    db = tmp_path / "runs.db"
    a = await record(db, script(3), sample="s1")
    changed = script(3)
    changed[0] = lw.ModelOutput.for_tool_call("add", {"a": 9, "b": 1}, content="step 0")
    b = await record(db, changed, sample="s1")
    with pytest.raises(lw.ConfigurationError, match="sample"):
        lw.diff_runs(a, b, db=db)
    r = cli("runs", "diff", a, b, "--db", str(db), "--exit-code", cwd=tmp_path)
    assert r.code == 2
    assert "--sample" in r.err and "1 sample" in r.err
    r = cli("runs", "diff", a, b, "--db", str(db), "--sample", "s1", "--exit-code", cwd=tmp_path)
    assert r.code == 4, r.err


async def test_a_diff_holds_the_steps_it_compares_not_both_runs(tmp_path: Path) -> None:
    """Two runs of 40 steps, each step's text 200,000 characters: 16 MB of text the
    diff reads side by side, to the end (the runs are the same). What it holds at its
    peak is the steps it compares, not every message read (tracemalloc: the bytes
    Python allocated, not a time)."""
    db = tmp_path / "runs.db"

    def long_steps() -> list[lw.ModelOutput | str]:
        outputs: list[lw.ModelOutput | str] = [
            lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}, content=f"{i} " + "x" * 200_000)
            for i in range(39)
        ]
        return [*outputs, "done"]

    a, b = await record(db, long_steps()), await record(db, long_steps())
    tracemalloc.start()
    try:
        d = lw.diff_runs(a, b, db=db)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert d.same and d.steps_a == d.steps_b == 40
    assert peak < 5_000_000, f"the diff held {peak / 1e6:.1f} MB at its peak"
