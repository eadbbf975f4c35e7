"""run(): the run's context — recording, sandbox, approval — around an agent."""

from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import list_runs, load_run
from loopwright.transcripts import ModelEvent, ToolEvent

call = lw.ModelOutput.for_tool_call


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    lw.store().set("last_sum", a + b)
    return a + b


async def test_a_run_is_recorded_with_its_events_messages_and_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model(
        "mock", outputs=[call("add", {"a": 2, "b": 3}), call("submit", {"answer": "5"})]
    )
    state = await lw.run(lw.react(name="adder", tools=[add]), "2+3?", model=model, db=db)
    assert state.text == "5"
    [info] = list_runs(db)
    assert info.name == "adder"
    assert info.status == "success"
    assert info.input == "2+3?"
    assert info.output == "5"
    with load_run(info.id, db=db) as log:
        events = list(log.events())
        kinds = [type(e).__name__ for e in events]
        assert kinds.count("ModelEvent") == 2
        assert kinds.count("ToolEvent") == 2
        assert [m.id for m in log.messages()] == [m.id for m in state.messages]
        assert log.store() == {"last_sum": 5}
        model_events = [e for e in events if isinstance(e, ModelEvent)]
        assert log.model_input(model_events[1])[-1].role == "tool"
        assert any(isinstance(e, ToolEvent) and e.function == "add" for e in events)


async def test_a_run_ended_by_a_limit_is_recorded_as_such(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=[call("add", {"a": 1, "b": 1})], repeat=True)
    state = await lw.run(
        lw.react(tools=[add]), "loop", model=model, db=db, limits=[lw.step_limit(3)]
    )
    assert state.limit is not None
    [info] = list_runs(db)
    assert info.status == "limit"
    assert info.limit is not None
    assert info.limit["type"] == "step"


async def test_an_agent_error_is_recorded_and_raised(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=["only one"])
    with pytest.raises(lw.ScriptExhaustedError):
        await lw.run(lw.react(), "task", model=model, db=db)
    [info] = list_runs(db)
    assert info.status == "error"
    assert info.error is not None
    assert "ScriptExhaustedError" in info.error


async def test_db_false_records_nothing(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    model = lw.get_model("mock", outputs=[call("submit", {"answer": "x"})])
    await lw.run(lw.react(), "t", model=model, db=False)
    assert not db.exists()


async def test_sub_agent_run_is_a_span_of_the_outer_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    inner_model = lw.get_model("mock", outputs=[call("submit", {"answer": "inner"})])
    inner = lw.react(name="inner", model=inner_model)

    @lw.tool
    async def delegate(task: str) -> str:
        """Delegate a task.

        Args:
            task: The task.
        """
        return (await lw.run(inner, task)).text

    outer_model = lw.get_model(
        "mock", outputs=[call("delegate", {"task": "x"}), call("submit", {"answer": "outer"})]
    )
    state = await lw.run(lw.react(tools=[delegate]), "go", model=outer_model, db=db)
    assert state.text == "outer"
    assert len(list_runs(db)) == 1  # the inner run is part of the outer one


async def test_approval_policy_applies_to_the_run() -> None:
    model = lw.get_model(
        "mock", outputs=[call("add", {"a": 1, "b": 2}), call("submit", {"answer": "refused"})]
    )
    rules = [
        lw.ApprovalRule(tools="add", approver="reject", explanation="no adding"),
        lw.ApprovalRule(tools="*", approver="approve"),
    ]
    state = await lw.run(lw.react(tools=[add]), "1+2", model=model, approval=rules, db=False)
    result = state.messages[2]
    assert isinstance(result, lw.ToolMessage)
    assert result.error is not None
    assert result.error.type == "approval"
    assert "no adding" in result.text


async def test_run_with_a_local_sandbox_gives_tools_a_sandbox() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            call("bash", {"cmd": "echo hi > f.txt && cat f.txt"}),
            call("submit", {"answer": "ok"}),
        ],
    )
    state = await lw.run(lw.react(tools=[lw.bash()]), "t", model=model, sandbox="local", db=False)
    assert "hi" in state.messages[2].text
    with pytest.raises(lw.SandboxError):
        lw.sandbox()  # gone after the run


async def test_a_run_without_a_transcript_records_no_calls_but_what_code_records() -> None:
    seen: list[lw.Transcript] = []

    @lw.tool
    async def look() -> str:
        """Look at the run's transcript."""
        t = lw.transcript()
        t.info("looked")
        seen.append(t)
        return "ok"

    def script() -> list[lw.ModelOutput | str]:
        return [call("add", {"a": 2, "b": 3}), call("look", {}), call("submit", {"answer": "5"})]

    agent = lw.react(tools=[add, look])
    state = await lw.run(
        agent, "2+3?", model=lw.get_model("mock", outputs=script()), db=False, transcript=False
    )
    assert state.completed == "submit" and state.text == "5"
    assert [m.text for m in state.messages if m.role == "tool"] == ["5", "ok", "5"]
    [quiet] = seen
    # no model, tool or store events: only what the tool recorded itself
    assert [type(e).__name__ for e in quiet.walk()] == ["InfoEvent"]

    seen.clear()
    await lw.run(agent, "2+3?", model=lw.get_model("mock", outputs=script()), db=False)
    [full] = seen
    kinds = [type(e).__name__ for e in full.walk()]
    assert kinds.count("ModelEvent") == 3 and "StoreEvent" in kinds

    with pytest.raises(lw.ConfigurationError, match="db=False"):
        await lw.run(agent, "2+3?", model=lw.get_model("mock", outputs=script()), transcript=False)


def test_run_sync_raises_the_agents_own_error_unchained() -> None:
    """Issue 15, item 7: the error was chained onto "RuntimeError: no running event loop"."""
    import traceback

    class Boom(Exception):
        pass

    async def failing(state: lw.AgentState) -> lw.AgentState:
        raise Boom("the real error")

    with pytest.raises(Boom) as info:
        lw.run_sync(failing, "go", db=False)
    error = info.value
    for linked in (error.__context__, error.__cause__):
        assert not (isinstance(linked, RuntimeError) and "no running event loop" in str(linked))
    text = "".join(traceback.format_exception(error))
    assert "no running event loop" not in text
    assert "During handling of the above exception" not in text
    assert "Boom: the real error" in text


async def test_the_state_names_its_run_so_it_loads_without_guessing(tmp_path: Path) -> None:
    """Issue 15, item 14: the state returned by run() had no run id."""
    db = tmp_path / "runs.db"

    def answering(answer: str) -> lw.Model:
        return lw.get_model("mock", outputs=[call("submit", {"answer": answer})])

    first = await lw.run(lw.react(name="first"), "one", model=answering("1"), db=db)
    second = await lw.run(lw.react(name="second"), "two", model=answering("2"), db=db)
    limited = await lw.run(
        lw.react(name="third"), "three", model="mock", db=db, limits=[lw.step_limit(1)]
    )
    ids = [first.run_id, second.run_id, limited.run_id]
    assert all(ids) and len(set(ids)) == 3
    for state, name in [(first, "first"), (second, "second"), (limited, "third")]:
        assert state.run_id is not None
        with load_run(state.run_id, db=db) as log:
            assert log.info.id == state.run_id
            assert log.info.name == name
    # a state continued by another run gets that run's id
    again = await lw.run(lw.react(name="again"), first, model=answering("3"), db=db)
    assert again is first and again.run_id not in ids


async def test_a_run_not_kept_has_an_id_that_no_store_confuses_with_another(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    kept = await lw.run(
        lw.react(),
        "kept",
        model=lw.get_model("mock", outputs=[call("submit", {"answer": "x"})]),
        db=db,
    )
    gone = await lw.run(
        lw.react(),
        "gone",
        model=lw.get_model("mock", outputs=[call("submit", {"answer": "y"})]),
        db=False,
    )
    assert gone.run_id and gone.run_id != kept.run_id
    with pytest.raises(lw.RunStoreError):
        load_run(gone.run_id, db=db)  # not the latest run by mistake


async def test_a_run_inside_a_run_has_the_outer_runs_id(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    inner_ids: list[str | None] = []

    @lw.tool
    async def delegate(task: str) -> str:
        """Delegate a task.

        Args:
            task: The task.
        """
        inner = lw.get_model("mock", outputs=[call("submit", {"answer": "inner"})])
        state = await lw.run(lw.react(name="inner"), task, model=inner)
        inner_ids.append(state.run_id)
        return state.text

    outer_model = lw.get_model(
        "mock", outputs=[call("delegate", {"task": "x"}), call("submit", {"answer": "outer"})]
    )
    state = await lw.run(lw.react(tools=[delegate]), "go", model=outer_model, db=db)
    assert inner_ids == [state.run_id]


async def test_a_time_limit_counts_the_wait_for_a_sandbox_slot() -> None:
    """Issue 16, item 3: a time_limit(2) run waited 10.9 s for a free sandbox."""
    import asyncio
    import time

    model = lw.get_model("mock", outputs=[call("submit", {"answer": "ok"})])
    before = lw.max_sandboxes()
    lw.set_max_sandboxes(1)
    try:
        async with lw.use_sandbox("local"):  # the only slot, held for 3 s below
            began = time.monotonic()
            run = asyncio.create_task(
                lw.run(lw.react(), "t", model=model, sandbox="local", db=False,
                       limits=[lw.time_limit(0.3)])
            )  # fmt: skip
            done, _ = await asyncio.wait({run}, timeout=3)
        state = await run
        waited = time.monotonic() - began
    finally:
        lw.set_max_sandboxes(before)
    assert done, "the run waited past its time limit for a sandbox slot"
    assert state.completed == "limit"
    assert state.limit is not None and state.limit.type == "time"
    assert waited < 2.5
    with pytest.raises(lw.SandboxError):
        lw.sandbox()
