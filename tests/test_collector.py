"""Collector tuning: what ``loopwright run`` / ``eval`` do to the process's collector,
that they undo it, and that the library's ``run()`` and ``eval()`` leave it alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopwright as lw
from loopwright._collector import TUNED_THRESHOLDS, tuned_collector
from loopwright.cli._main import main as cli_main

#: What a tool saw of the collector while the agent ran: (thresholds, frozen objects).
SEEN: list[tuple[tuple[int, int, int], int]] = []


@lw.tool
def probe() -> str:
    """Look at the garbage collector."""
    SEEN.append((gc.get_threshold(), gc.get_freeze_count()))
    return "looked"


@pytest.fixture(autouse=True)
def _collector() -> Iterator[None]:
    """Each test starts with the interpreter's collector as it is, nothing frozen, and
    gets it back whatever the test does."""
    before = gc.get_threshold()
    gc.unfreeze()
    SEEN.clear()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def _script() -> list[lw.ModelOutput]:
    return [
        lw.ModelOutput.for_tool_call("probe", {}),
        lw.ModelOutput.for_tool_call("submit", {"answer": "done"}),
    ]


def test_tuned_collector_freezes_raises_and_restores() -> None:
    gc.set_threshold(123, 4, 5)
    with tuned_collector():
        assert gc.get_threshold() == TUNED_THRESHOLDS
        assert gc.get_freeze_count() > 0  # the heap alive at the start is frozen
    assert gc.get_threshold() == (123, 4, 5)
    assert gc.get_freeze_count() == 0


def test_tuned_collector_restores_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), tuned_collector():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_freeze_made_before_is_kept() -> None:
    gc.freeze()  # the application's own
    frozen = gc.get_freeze_count()
    with tuned_collector():
        pass
    assert gc.get_freeze_count() >= frozen > 0


async def test_run_leaves_the_collector_alone() -> None:
    gc.set_threshold(700, 10, 10)
    model = lw.get_model("mock", outputs=_script())
    state = await lw.run(lw.react(tools=[probe]), "Look.", model=model, db=False)
    assert state.completed == "submit"
    assert SEEN == [((700, 10, 10), 0)]
    assert gc.get_threshold() == (700, 10, 10)


def _task() -> lw.Task:
    data = [{"id": f"s{i}", "input": "Look.", "target": "done"} for i in range(3)]
    return lw.Task(data, agent=lw.react(tools=[probe]), scorer=lw.match())


def test_eval_leaves_the_collector_alone_unless_asked() -> None:
    gc.set_threshold(700, 10, 10)
    model = lw.get_model("mock", outputs=_script(), repeat=True)
    [result] = lw.eval(_task(), model=model, max_samples=1, db=False)
    assert result.scored == 3
    assert SEEN == [((700, 10, 10), 0)] * 3
    SEEN.clear()
    [result] = lw.eval(_task(), model=model, max_samples=1, db=False, tune_collector=True)
    assert result.scored == 3
    assert {thresholds for thresholds, _ in SEEN} == {TUNED_THRESHOLDS}
    assert all(frozen > 0 for _, frozen in SEEN)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


PROBE_TOOL = """
import gc
import loopwright as lw

SEEN = []

@lw.tool
def probe() -> str:
    '''Look at the garbage collector.'''
    SEEN.append((gc.get_threshold(), gc.get_freeze_count()))
    return "looked"
"""

PROBE_TASK = """
import loopwright as lw
from probe_tool import probe

@lw.task
def looks() -> lw.Task:
    data = [{"id": f"s{i}", "input": "Look.", "target": "done"} for i in range(2)]
    return lw.Task(data, agent=lw.react(tools=[probe]), scorer=lw.match())
"""


def _probe_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    (tmp_path / "probe_tool.py").write_text(PROBE_TOOL)
    (tmp_path / "probe_task.py").write_text(PROBE_TASK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_tool  # type: ignore[import-not-found]

    seen: list[object] = probe_tool.SEEN
    seen.clear()  # (the module is imported once for all tests)
    return seen


def test_cli_run_tunes_while_the_agent_runs_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _probe_module(tmp_path, monkeypatch)
    (tmp_path / "s.json").write_text(
        '[{"tool": "probe", "arguments": {}}, {"tool": "submit", "arguments": {"answer": "ok"}}]'
    )
    gc.set_threshold(700, 10, 10)
    args = ["run", "Look.", "-m", "mock", "-M", "outputs=@s.json", "-t", "probe_tool:probe"]
    code = cli_main([*args, "--submit", "-q", "--db", str(tmp_path / "runs.db")])
    assert code == 0
    assert len(seen) == 1
    [(thresholds, frozen)] = seen
    assert thresholds == TUNED_THRESHOLDS and isinstance(frozen, int) and frozen > 0
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_cli_eval_tunes_while_the_samples_run_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _probe_module(tmp_path, monkeypatch)
    (tmp_path / "s.json").write_text(
        '[{"tool": "probe", "arguments": {}}, {"tool": "submit", "arguments": {"answer": "done"}}]'
    )
    gc.set_threshold(700, 10, 10)
    args = ["eval", "probe_task.py", "-m", "mock", "-M", "outputs=@s.json", "-M", "repeat=true"]
    code = cli_main([*args, "--max-samples", "1", "-q", "--db", str(tmp_path / "runs.db")])
    assert code == 0
    assert len(seen) == 2
    assert {t for t, _ in seen} == {TUNED_THRESHOLDS}  # type: ignore[misc]
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
