"""A sample that did not finish says so: ``stopped`` (a hook raised ``lw.StopRun``:
scored as it stood, its reason kept) and ``waiting`` (an approval policy deferred its
calls: not scored, the eval's run waits, a resume continues it), never ``success``.
Real SQLite files, a scripted model, a real hook and a real deferring policy
(``_status_task.py``)."""

from __future__ import annotations

import io
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import loopwright as lw
from loopwright.evals._progress import result_view, summary_line, summary_rows
from loopwright.transcripts import ErrorEvent, InfoEvent

TASK = Path(__file__).with_name("_status_task.py")
SPEC = f"{TASK}@statuses"


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.txt"
    monkeypatch.setenv("STATUS_CALLS", str(path))
    return path


def ran(calls: Path) -> Counter[str]:
    return Counter(calls.read_text().splitlines() if calls.exists() else [])


def by_id(result: lw.EvalResult) -> dict[str, lw.SampleResult]:
    return {s.id: s for s in result.samples}


async def test_stopped_and_waiting_samples_are_not_successes(tmp_path: Path, calls: Path) -> None:
    db = tmp_path / "runs.db"
    [result] = await lw.eval_async(SPEC, db=db)
    s = by_id(result)
    assert {k: v.status for k, v in s.items()} == {
        "s0": "success",
        "s1": "stopped",
        "s2": "waiting",
    }
    assert s["s1"].reason == "budget spent on 1+1" and s["s1"].error is None
    assert s["s2"].reason == "waiting for approval of bash (call-2)"
    # stopped: scored as it stood (no answer: 0); waiting: not scored, not in the mean
    assert s["s1"].scores["match"].value == 0.0 and s["s2"].scores == {}
    assert math.isclose(result.metrics["match"]["accuracy"] or -1, 0.5)
    assert (result.scored, result.stopped, result.waiting, result.errors) == (2, 1, 1, 0)
    assert result.completed == 2  # (the waiting one has not ended)
    assert result.status == "waiting"
    assert result.too_many_errors(True) and not result.too_many_errors(False)
    assert ran(calls)["bash echo 4"] == 0  # the deferred call never ran

    [run] = lw.list_runs(db)
    assert run.status == "waiting"
    assert isinstance(run.output, dict)
    assert (run.output["stopped"], run.output["waiting"], run.output["scored"]) == (1, 1, 2)
    with lw.load_run(run.id, db) as log:
        rows = {x.id: x for x in log.samples}
        assert {k: x.status for k, x in rows.items()} == {
            "s0": "success",
            "s1": "stopped",
            "s2": "waiting",
        }
        assert rows["s1"].error == "budget spent on 1+1"
        assert rows["s1"].scores is not None and rows["s1"].scores["match"]["value"] == 0.0
        assert rows["s2"].scores is None and rows["s2"].error == s["s2"].reason
        for key in ("s1", "s2"):  # neither is an error: no ErrorEvent in its transcript
            assert not [e for e in log.events(rows[key]) if isinstance(e, ErrorEvent)]
        stopped = [e for e in log.events(rows["s1"]) if isinstance(e, InfoEvent)]
        assert any("stopped by a hook: budget spent on 1+1" in str(e.data) for e in stopped)


async def test_the_summary_and_json_show_them(tmp_path: Path) -> None:
    [result] = await lw.eval_async(SPEC, db=tmp_path / "runs.db")
    line = summary_line(result)
    assert "2 scored" in line and "1 stopped" in line and "1 waiting for approval" in line
    [row] = summary_rows([result])
    assert (row["status"], row["stopped"], row["waiting"], row["scored"]) == ("waiting", 1, 1, 2)
    out = io.StringIO()
    Console(file=out, width=300).print(result_view(result))
    text = out.getvalue()
    assert "1 of 3 samples wait for approval" in text and f"--resume {result.run_id}" in text
    assert "1 of 3 samples were stopped by a hook" in text
    assert "s1: budget spent on 1+1" in text and "s2: waiting for approval of bash" in text


async def test_resume_continues_a_waiting_sample_and_keeps_a_stopped_one(
    tmp_path: Path, calls: Path
) -> None:
    db = tmp_path / "runs.db"
    [first] = await lw.eval_async(SPEC, db=db)
    assert ran(calls) == Counter({"model 0+0": 1, "hook 1+1": 1, "model 2+2": 1})
    # the same policy: the deferred call is asked about again, and waits again
    [again] = await lw.eval_async(SPEC, db=db, resume=first.run_id)
    s = by_id(again)
    assert (s["s1"].status, s["s1"].resumed, s["s1"].reason) == (
        "stopped",
        True,
        "budget spent on 1+1",
    )
    assert (s["s2"].status, s["s2"].resumed) == ("waiting", False)
    assert again.status == "waiting"
    # nothing ran again: the stopped sample was carried, the waiting one went on from
    # its last step (its model call answered from the store)
    assert ran(calls) == Counter({"model 0+0": 1, "hook 1+1": 1, "model 2+2": 1})
    with lw.load_run(again.run_id or "", db) as log:
        [waited] = [x for x in log.samples if x.id == "s2"]
        said = [str(e.data) for e in log.events(waited) if isinstance(e, InfoEvent)]
        assert any("waited for approval: the approval policy is asked again" in t for t in said)

    # decided: a policy that approves bash; the waiting sample finishes from its last step
    [done] = await lw.eval_async(SPEC, db=db, resume=again.run_id, task_args={"approve": True})
    s = by_id(done)
    assert {k: v.status for k, v in s.items()} == {
        "s0": "success",
        "s1": "stopped",
        "s2": "success",
    }
    assert s["s2"].scores["match"].value == 1.0 and s["s1"].reason == "budget spent on 1+1"
    assert ran(calls) == Counter({"model 0+0": 1, "hook 1+1": 1, "model 2+2": 2, "bash echo 4": 1})
    assert done.status == "success" and math.isclose(done.metrics["match"]["accuracy"] or -1, 2 / 3)
    runs = {r.id: r.status for r in lw.list_runs(db)}
    assert runs[done.run_id or ""] == "success"
    with lw.load_run(done.run_id or "", db) as log:
        rows = {x.id: x for x in log.samples}
        assert (rows["s1"].status, rows["s1"].error) == ("stopped", "budget spent on 1+1")
        assert rows["s1"].metadata["resumed_from"] == again.run_id
        assert rows["s2"].metadata["continued_from"] == again.run_id


async def test_a_shard_run_again_keeps_its_stopped_sample_and_reruns_the_waiting_one(
    tmp_path: Path, calls: Path
) -> None:
    db = tmp_path / "shard.db"
    [first] = await lw.eval_async(SPEC, db=db, shard="1/1")
    [again] = await lw.eval_async(SPEC, db=db, shard="1/1")
    s = by_id(again)
    assert (s["s1"].status, s["s1"].resumed, s["s1"].reason) == (
        "stopped",
        True,
        "budget spent on 1+1",
    )
    assert (s["s2"].status, s["s2"].resumed) == ("waiting", False)  # not done: run again
    assert ran(calls)["hook 1+1"] == 1 and ran(calls)["model 2+2"] == 2
    # merged into another store: the stopped one carried as it ended, the waiting one run
    [merged] = await lw.eval_async(SPEC, db=tmp_path / "merged.db", merge=[db])
    s = by_id(merged)
    assert (s["s1"].status, s["s1"].scores["match"].value) == ("stopped", 0.0)
    assert s["s2"].status == "waiting" and merged.status == "waiting"
    assert ran(calls)["hook 1+1"] == 1 and ran(calls)["model 2+2"] == 3
    with lw.load_run(merged.run_id or "", tmp_path / "merged.db") as log:
        assert {x.id: x.status for x in log.samples}["s1"] == "stopped"
    assert first.run_id != again.run_id


async def test_a_hook_stopping_every_sample_is_not_a_success(tmp_path: Path) -> None:
    class StopAll(lw.Hooks):
        async def on_step_start(self, state: lw.AgentState) -> None:
            raise lw.StopRun("no budget")

    task = lw.Task(
        [{"id": "a", "input": "1+1", "target": "2"}, {"id": "b", "input": "2+2", "target": "4"}],
        agent=lw.react(submit=False, hooks=[StopAll()]),
        scorer=lw.match("numeric"),
        model=lw.get_model("mock", outputs=lambda m, t, c: "The answer is 2."),
    )
    [result] = await lw.eval_async(task, db=tmp_path / "runs.db")
    assert [s.status for s in result.samples] == ["stopped", "stopped"]
    assert result.metrics["match"]["accuracy"] == 0.0  # scored as they stood: no answer
    assert result.too_many_errors(True) and result.too_many_errors(2)
    assert not result.too_many_errors(3)


async def test_approving_an_eval_run_is_refused_saying_how_to_go_on(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    [result] = await lw.eval_async(SPEC, db=db)
    with pytest.raises(lw.ApprovalRefused, match="resume the eval"):
        lw.approve(result.run_id or "", all=True, db=db)


async def test_hostile_ids_and_reasons_are_shown_visible(tmp_path: Path) -> None:
    from ._status_task import bash

    class StopOnTheModelsWord(lw.Hooks):
        async def on_step_start(self, state: lw.AgentState) -> None:
            if state.messages[0].text == "stop":  # (a reason that quotes a model's text)
                raise lw.StopRun("told: \x1b[2J\x1b]8;;http://evil\x07 cleared")

    task = lw.Task(
        [{"id": "s\x1b[31m", "input": "go", "target": "x"}, {"id": "t", "input": "stop"}],
        agent=lw.react(tools=[bash], submit=False, hooks=[StopOnTheModelsWord()]),
        scorer=lw.match(),
        model=lw.get_model(
            "mock", outputs=lambda m, t, c: lw.ModelOutput.for_tool_call("bash", {"cmd": "x"})
        ),
        approval=lw.defer_approval("bash"),
    )
    [result] = await lw.eval_async(task, db=tmp_path / "runs.db")
    assert sorted(s.status for s in result.samples) == ["stopped", "waiting"]
    out = io.StringIO()
    Console(file=out, width=300, force_terminal=True).print(result_view(result))
    text = out.getvalue()
    assert "s\\x1b[31m: waiting for approval of bash" in text
    assert "told: \\x1b[2J\\x1b]8;;http://evil\\x07 cleared" in text
    assert "\x1b[2J" not in text and "\x07" not in text and "\x1b]8" not in text
    assert "\x1b[31m:" not in text


@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_waiting_sample_keeps_its_sandbox_folder_until_it_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopwright.runtime._resume import prune_sandbox_folders

    monkeypatch.setenv("LOOPWRIGHT_SANDBOXES", str(tmp_path / "boxes"))
    db = tmp_path / "runs.db"

    @lw.tool
    async def write(line: str) -> str:
        """Add a line to the notes.

        Args:
            line: The line.
        """
        await lw.sandbox().exec(["sh", "-c", f"echo {line} >> notes.txt"])
        return "written"

    @lw.tool
    async def deploy() -> str:
        """Deploy the notes."""
        return await lw.sandbox().read_file("notes.txt")

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = [m for m in messages if isinstance(m, lw.ToolMessage)]
        if not done:
            return lw.ModelOutput.for_tool_call("write", {"line": "mine"})
        if len(done) == 1:
            return lw.ModelOutput.for_tool_call("deploy", {})
        return lw.ModelOutput.from_text(f"deployed: {done[-1].text}")

    def task(approval: Any) -> lw.Task:
        samples = [lw.Sample(input="Go.", target="mine", id="s0", files={"notes.txt": "given\n"})]
        return lw.Task(
            samples,
            agent=lw.react(tools=[write, deploy], submit=False),
            scorer=lw.includes(),
            sandbox="local",
            name="deploying",
            approval=approval,
            model=lw.get_model("mock", outputs=respond),
        )

    [first] = await lw.eval_async(task(lw.defer_approval("deploy")), db=db)
    assert first.status == "waiting" and first.samples[0].status == "waiting"
    assert prune_sandbox_folders(db) == []  # the eval waits: its sample's folder is kept
    kept = list((tmp_path / "boxes").rglob("notes.txt"))
    assert len(kept) == 1 and kept[0].read_text() == "given\nmine\n"

    [done] = await lw.eval_async(task("dev"), db=db, resume=first.run_id)
    [sample] = done.samples
    # the same folder: the sample's files not written again, its own line there
    assert (sample.status, sample.answer) == ("success", "deployed: given\nmine\n")
    assert sample.scores["includes"].value == 1.0
    assert not any((tmp_path / "boxes").rglob("notes.txt"))  # finished: folders removed
