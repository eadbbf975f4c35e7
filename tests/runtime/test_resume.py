"""Resume: a run killed with kill -9 in the middle of a tool call goes on in a new process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.sandboxes._folders import run_folder
from tests._spawn import spawn_script

SCRIPT = Path(__file__).with_name("_resume_script.py")


def _spawn(db: Path, side: Path, *args: str, hang: int | None = None) -> subprocess.Popen[str]:
    at = str(hang) if hang is not None else None
    return spawn_script(SCRIPT, str(db), str(side), *args, env={"HANG_AT": at})


def _kill_at(proc: subprocess.Popen[str], side: Path, line: str) -> None:
    """kill -9 ``proc`` once ``line`` is in the side-effect file (its tool is asleep)."""
    deadline = time.monotonic() + 120
    while line not in (side.read_text().splitlines() if side.exists() else []):
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {line!r}: {proc.communicate()}")
        assert time.monotonic() < deadline, f"no {line!r} in time"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def test_a_killed_run_resumes_twice_in_new_processes(tmp_path: Path) -> None:
    db, side = tmp_path / "runs.db", tmp_path / "side.txt"
    _kill_at(_spawn(db, side, "start", hang=3), side, "start 3")
    [info] = lw.list_runs(db)
    assert info.status == "interrupted"
    run_id = info.id
    # the second part is killed too, in its own tool call
    _kill_at(_spawn(db, side, "resume", run_id, hang=6), side, "start 6")
    assert lw.list_runs(db)[0].status == "interrupted"
    out = _finish(_spawn(db, side, "resume", run_id))
    assert f"RUN {run_id} limit" in out

    lines = side.read_text().splitlines()
    starts = Counter(line for line in lines if line.startswith("start"))
    ends = Counter(line for line in lines if line.startswith("end"))
    # the step limit of 10 held across the three processes: steps 0..9, each done once
    assert ends == Counter(f"end {i}" for i in range(10))
    # only the calls in flight at the kills ran again
    assert starts == Counter({**{f"start {i}": 1 for i in range(10)}, "start 3": 2, "start 6": 2})

    [row] = lw.list_runs(db)  # one run
    assert row.id == run_id and row.status == "limit"
    assert row.metadata["resumes"] == 2
    with lw.load_run(run_id, db) as log:
        events = list(log.events())
        marks = [e for e in events if isinstance(e, lw.InfoEvent) and e.source == "resume"]
        models = [e for e in events if isinstance(e, lw.ModelEvent)]
        store = log.store()
        messages = log.messages()
    # two resume marks, each naming the call that runs again
    resumed = [m for m in marks if isinstance(m.data, dict)]
    assert [m.data["resume"] for m in resumed] == [1, 2]  # type: ignore[index]
    assert [c["function"] for c in resumed[0].data["run_again"]] == ["work"]  # type: ignore[index]
    again = [m for m in marks if isinstance(m.data, str)]
    assert len(again) == 2 and all("runs again" in str(m.data) for m in again)
    # every step recorded once: the steps answered from the record are not model calls
    assert len(models) == 10
    # the store is the recorded one: the change the killed call made was not recorded
    assert store["last"] == 9 and store["done"] == list(range(10))
    # the conversation has each step's call and result once
    results = [m.content for m in messages if isinstance(m, lw.ToolMessage)]
    assert results == [f"did {i}" for i in range(10)]
    # a finished run refuses to be resumed
    proc = _spawn(db, side, "resume", run_id)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "finished (limit)" in err


def _worker(log: list[str], hang: asyncio.Event | None = None) -> lw.ReactAgent:
    @lw.tool
    async def work(i: int) -> str:
        """Do step i.

        Args:
            i: The step.
        """
        log.append(f"start {i}")
        if hang is not None and i == 2:
            hang.set()
            await asyncio.sleep(3600)
        log.append(f"end {i}")
        return f"did {i}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done == 4:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "all done"})
        return lw.ModelOutput.for_tool_call("work", {"i": done})

    return lw.react(name="worker", tools=[work], model=lw.get_model("mock", outputs=respond))


async def _cancelled_run(db: Path, log: list[str]) -> str:
    """A run cancelled (as Ctrl-C does) while its third tool call runs."""
    hang = asyncio.Event()
    task = asyncio.create_task(lw.run(_worker(log, hang), "Work.", db=db))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = lw.list_runs(db)
    assert info.status == "cancelled"
    return info.id


async def test_a_cancelled_run_resumes_and_finishes(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)
    state = await lw.resume(run_id[:8], agent=_worker(log), db=db)
    assert state.run_id == run_id and state.completed == "submit"
    assert state.output is not None and "all done" in state.output.text
    # the cancelled call 2 ran again; 0 and 1 did not
    assert log == [
        *("start 0", "end 0", "start 1", "end 1", "start 2"),
        *("start 2", "end 2", "start 3", "end 3"),
    ]
    [info] = lw.list_runs(db)
    assert info.status == "success" and info.metadata["resumes"] == 1 and info.resumes == 1
    from loopwright.viewer._data import run_json

    assert run_json(info)["resumes"] == 1  # (the viewer shows "resumed 1x")
    with pytest.raises(lw.ConfigurationError, match=r"finished \(success\)"):
        await lw.resume(run_id, agent=_worker(log), db=db)


async def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    await _cancelled_run(db, log)
    with pytest.raises(lw.RunStoreError, match="no run 'nope'"):
        await lw.resume("nope", agent=_worker(log), db=db)


async def test_a_run_of_an_agent_with_other_tools_is_refused(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)

    @lw.tool
    def other(x: int) -> int:
        """Another tool.

        Args:
            x: A number.
        """
        return x

    changed = lw.react(name="worker", tools=[other], model="mock")
    with pytest.raises(
        lw.ConfigurationError, match=r"recorded with the tools \['submit', 'work'\]"
    ):
        await lw.resume(run_id, agent=changed, db=db)
    # nothing was written: the run can still be resumed by the right agent
    assert lw.list_runs(db)[0].status == "cancelled"
    state = await lw.resume(run_id, agent=_worker(log), db=db)
    assert state.completed == "submit"


async def test_limits_count_what_the_earlier_part_used(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)  # 3 model calls made
    state = await lw.resume(
        run_id, agent=_worker(log), db=db, limits=[lw.step_limit(4), lw.time_limit(3600)]
    )
    # the 3 earlier steps count: the 4th step (its work call) is the last one
    assert state.completed == "limit" and state.limit is not None
    assert state.limit.type == "step" and state.limit.value == 4
    assert log[-2:] == ["start 3", "end 3"]


def _box_worker(hang: asyncio.Event | None = None) -> lw.ReactAgent:
    @lw.tool
    async def write(i: int) -> str:
        """Add a line to the workspace's notes, and read them.

        Args:
            i: The line.
        """
        box = lw.sandbox()
        await box.exec(["sh", "-c", f"echo line {i} >> notes.txt"])
        if hang is not None and i == 1:
            hang.set()
            await asyncio.sleep(3600)
        return await box.read_file("notes.txt")

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done == 3:
            return lw.ModelOutput.for_tool_call("submit", {"answer": "ok"})
        return lw.ModelOutput.for_tool_call("write", {"i": done})

    return lw.react(name="writer", tools=[write], model=lw.get_model("mock", outputs=respond))


def _bwrap_works() -> bool:
    from loopwright.sandboxes._bwrap import BwrapSandbox

    async def check() -> bool:
        try:
            await (await BwrapSandbox.create()).cleanup()
        except lw.SandboxUnavailableError:
            return False
        return True

    return asyncio.run(check())


@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_the_sandbox_folder_is_kept_for_the_resumed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bwrap" and not _bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    if backend == "local":  # (a bwrap sandbox's user must reach it: the default place)
        monkeypatch.setenv("LOOPWRIGHT_SANDBOXES", str(tmp_path / "boxes"))
    asyncio.run(_sandbox_folder_kept(tmp_path, backend))


async def _sandbox_folder_kept(tmp_path: Path, backend: str) -> None:
    db, hang = tmp_path / "runs.db", asyncio.Event()
    task = asyncio.create_task(lw.run(_box_worker(hang), "Write.", db=db, sandbox=backend))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = lw.list_runs(db)
    folder = run_folder(db, info.id)
    if backend == "local":
        assert folder.parent.parent == tmp_path / "boxes"
    # the run did not finish: its sandbox's folder stays, by its run's id
    assert (folder / "workspace" / "notes.txt").read_text() == "line 0\nline 1\n"
    state = await lw.resume(info.id, agent=_box_worker(), db=db, sandbox=backend)
    assert state.completed == "submit"
    # the resumed run's sandbox had the files: line 1 again (that call was in flight)
    results = [m.content for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[-2] == "line 0\nline 1\nline 1\nline 2\n"
    assert not folder.exists()  # the run finished: the folder went with its sandbox


def _slow_worker(log: list[str], hang: asyncio.Event | None = None) -> lw.ReactAgent:
    """Like ``_worker``, but its first call takes 0.3 s: the first part lasts that long."""
    agent = _worker(log, hang)
    inner = agent.tools[0]

    @lw.tool(name="work")
    async def slow(i: int) -> str:
        """Do step i.

        Args:
            i: The step.
        """
        if i == 0:
            await asyncio.sleep(0.3)
        result: str = await inner.fn(i=i)  # type: ignore[attr-defined]
        return result

    return lw.react(name="worker", tools=[slow], model=agent.model)


@pytest.mark.parametrize(
    ("limit", "kind"), [(lw.time_limit(0.25), "time"), (lw.token_limit(1), "token")]
)
async def test_time_and_tokens_of_the_earlier_part_count(
    tmp_path: Path, limit: lw.Limit, kind: str
) -> None:
    db, log, hang = tmp_path / "runs.db", [], asyncio.Event()
    task = asyncio.create_task(lw.run(_slow_worker(log, hang), "Work.", db=db))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = lw.list_runs(db)
    # the first part took 0.3 s and some tokens: either limit is spent when it goes on
    state = await lw.resume(info.id, agent=_slow_worker(log), db=db, limits=[limit])
    assert state.completed == "limit" and state.limit is not None and state.limit.type == kind
    assert "start 3" not in log  # no new step was made


async def test_a_run_still_going_is_not_resumed(tmp_path: Path) -> None:
    db, log, hang = tmp_path / "runs.db", [], asyncio.Event()
    task = asyncio.create_task(lw.run(_worker(log, hang), "Work.", db=db))
    await hang.wait()
    try:
        run_id = lw.list_runs(db)[0].id
        with pytest.raises(lw.ConfigurationError, match="still running"):
            await lw.resume(run_id, agent=_worker(log), db=db)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_the_conversation_of_both_parts_reads_in_order(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)
    await lw.resume(run_id, agent=_worker(log), db=db)
    export = tmp_path / "run.json"
    lw.export_run(run_id, export, db=db)
    with lw.load_run(str(export)) as copy:  # (read back through the JSON export)
        messages = copy.messages()
        events = list(copy.events())
    results = [m.content for m in messages if isinstance(m, lw.ToolMessage)]
    assert results == ["did 0", "did 1", "did 2", "did 3", "all done"]
    marks = [e for e in events if isinstance(e, lw.InfoEvent) and e.source == "resume"]
    assert marks and isinstance(marks[0].data, dict) and marks[0].data["was"] == "cancelled"


async def test_an_agent_with_a_nudge_does_not_keep_it(tmp_path: Path) -> None:
    db, log, hang = tmp_path / "runs.db", [], asyncio.Event()

    def nudged(hang: asyncio.Event | None) -> lw.ReactAgent:
        worker = _worker(log, hang)
        return lw.react(
            name="worker", tools=worker.tools, model=worker.model, nudge="Go on ({remaining})."
        )

    task = asyncio.create_task(lw.run(nudged(hang), "Work.", db=db))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    state = await lw.resume(lw.list_runs(db)[0].id, agent=nudged(None), db=db)
    assert state.completed == "submit"
    users = [m.content for m in state.messages if isinstance(m, lw.UserMessage)]
    assert users == ["Work."]  # the recorded request's nudge is not in the conversation


async def test_a_run_is_not_resumed_inside_another(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)
    async with lw.recording(db=False):
        with pytest.raises(lw.ConfigurationError, match="not inside another run"):
            await lw.resume(run_id, agent=_worker(log), db=db)


async def test_two_resumes_at_once_one_takes_the_run(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)
    first, second = await asyncio.gather(
        lw.resume(run_id, agent=_worker(log), db=db),
        lw.resume(run_id, agent=_worker(log), db=db),
        return_exceptions=True,
    )
    outcomes = sorted([first, second], key=lambda x: isinstance(x, BaseException))
    state, refused = outcomes
    assert isinstance(state, lw.AgentState) and state.completed == "submit"
    # refused when it reads the row (the other took it: "still running") or when it tries
    # to take it (the other got there between its read and its write)
    assert isinstance(refused, (lw.RunStoreError, lw.ConfigurationError))
    assert "taken by another resume" in str(refused) or "still running" in str(refused)
    assert log.count("start 2") == 2 and log.count("end 3") == 1  # it ran once more, not twice


async def test_an_eval_run_is_resumed_as_an_eval(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    task = lw.Task([{"input": "x", "target": "y"}], agent=lw.react(submit=False), name="t")
    [result] = await lw.eval_async(task, model=lw.get_model("mock", outputs=["y"]), db=db)
    with pytest.raises(lw.ConfigurationError, match="is an eval's"):
        await lw.resume(result.run_id or "", agent=_worker([]), db=db)


async def test_the_point_read_from_sql_is_the_recorded_run(tmp_path: Path) -> None:
    """The resume point (counts read by SQLite, the input rebuilt from its chain) agrees
    with the run read event by event, with an agent used as a tool nested in it."""
    from loopwright.log._resume_point import resume_point

    db, log, hang = tmp_path / "runs.db", [], asyncio.Event()
    helper = lw.as_tool(
        lw.react(
            name="helper",
            model=lw.get_model(
                "mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "42"})] * 9
            ),
        )
    )
    worker = _worker(log, hang)

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        if done < 2:  # the helper twice, then work(2), which hangs
            return lw.ModelOutput.for_tool_call("helper", {"input": "the answer?"})
        return lw.ModelOutput.for_tool_call("work", {"i": 2})

    agent = lw.react(
        name="worker", tools=[*worker.tools, helper], model=lw.get_model("mock", outputs=respond)
    )
    task = asyncio.create_task(lw.run(agent, "Work.", db=db))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = lw.list_runs(db)
    point = resume_point(info.id, db)
    with lw.load_run(info.id, db) as run_log:
        events = list(run_log.events())
        models = [e for e in events if isinstance(e, lw.ModelEvent)]
        top = [e for e in models if e.span_id is None]
        assert point.last is not None and point.last.event_id == top[-1].id
        assert point.last.messages == run_log.model_input(top[-1])
    nested = len(models) - len(top)
    assert nested >= 1  # the helper's calls count as steps, as a step limit counts them
    assert point.consumed.steps == len(models)
    assert point.consumed.tokens == sum(e.usage.total_tokens for e in models if e.usage)
    assert [c.function for c in point.last.in_flight] == ["work"]


async def test_a_limit_around_the_resume_counts_this_process_only(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)  # 3 model calls made
    with lw.step_limit(2):  # the caller's budget: the 2 calls made now, not the earlier 3
        state = await lw.resume(run_id, agent=_worker(log), db=db)
    assert state.completed == "submit"


async def test_a_call_that_is_not_the_agents_step_goes_live(tmp_path: Path) -> None:
    """A call offering other tools than the recorded step's (a history policy's summary),
    or that is not the agent loop's step (a hook's), is made live; the step's call is
    still answered from the store."""
    from loopwright.log._resume_point import resume_point
    from loopwright.model._step import as_step
    from loopwright.runtime._resume import ResumeModel

    db, log = tmp_path / "runs.db", []
    run_id = await _cancelled_run(db, log)
    point = resume_point(run_id, db)
    assert point.last is not None and point.last.step
    model = ResumeModel(point, lw.get_model("mock", outputs=["a summary", "a hook's"]))
    summary = await model.generate([lw.UserMessage(content="Summarise.")])
    assert summary.text == "a summary"
    other = await model.generate(point.last.messages, point.last.tools)
    assert other.text == "a hook's"
    step = await as_step(model.generate(point.last.messages, point.last.tools))
    assert step is point.last.output and step.tool_calls[0].arguments == {"i": 2}
