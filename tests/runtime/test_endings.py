"""The run scope says how each run, sample and span ended once, by the scope that owns it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call
SRC = Path(lw.__file__).parent


def thinker(name: str = "inner") -> lw.Agent:
    """An agent that thinks forever (until a limit ends it)."""
    model = lw.get_model("mock", outputs=[call("think", {"thought": "x"})], repeat=True)
    return lw.react(name=name, model=model, tools=[lw.think()])


def where(db: Path, kind: type, sample: str | None = None) -> tuple[int, int]:
    """How many ``kind`` events the run (or sample) has at the top, and inside tool calls."""
    with lw.load_run(db=db) as log:
        tree = log.tree(sample)
    top = sum(isinstance(e, kind) for e in tree)
    inside = sum(
        isinstance(e2, kind) for e in tree if isinstance(e, lw.ToolEvent) for e2 in e.events
    )
    return top, inside


def delegate_to(agent: lw.Agent) -> lw.Tool:
    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        return (await lw.run(agent, q)).text

    return delegate


async def test_the_outer_runs_limit_met_in_a_nested_run_is_recorded_by_the_outer_run(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    outer = lw.get_model("mock", outputs=[call("delegate", {"q": "x"})])
    state = await lw.run(
        lw.react(tools=[delegate_to(thinker())]),
        "go",
        model=outer,
        db=db,
        limits=[lw.step_limit(3)],
    )
    assert state.completed == "limit"
    # the limit is the outer run's: it records it, at its own level, not the nested run
    assert where(db, lw.LimitEvent) == (1, 0)
    [run] = lw.list_runs(db)
    assert run.status == "limit"


async def test_a_nested_runs_own_limit_is_recorded_inside_it_and_not_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"

    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        state = await lw.run(thinker(), q, limits=[lw.step_limit(2)])
        assert state.completed == "limit"
        return "the helper ran out of steps"

    outer = lw.get_model(
        "mock", outputs=[call("delegate", {"q": "x"}), call("submit", {"answer": "done"})]
    )
    state = await lw.run(lw.react(tools=[delegate]), "go", model=outer, db=db)
    assert state.completed == "submit" and state.limit is None
    assert where(db, lw.LimitEvent) == (0, 1)
    [run] = lw.list_runs(db)
    assert run.status == "success"


async def test_raise_on_limit_records_the_limit_and_the_messages_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(lw.LimitExceededError):
        await lw.run(thinker(), "go", db=db, limits=[lw.step_limit(2)], raise_on_limit=True)
    assert where(db, lw.LimitEvent) == (1, 0)
    [run] = lw.list_runs(db)
    assert run.status == "limit"
    with lw.load_run(db=db) as log:
        assert [m.role for m in log.messages()][:1] == ["user"]


async def test_a_run_inside_a_sample_says_its_limit_once_and_the_sample_ends_on_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(name="eval", db=db) as rec:
        async with rec.sample("s1", input="go") as s:
            state = await lw.run(thinker(), "go", limits=[lw.step_limit(2)])
            s.finish(messages=state.messages, limit=state.limit, scores={"match": 0})
        assert s.status == "limit" and s.scores == {"match": 0}
    with lw.load_run(db=db) as log:
        [sample] = log.samples
        assert sample.status == "limit" and sample.limit is not None
        limits = [e for e in log.events(sample) if isinstance(e, lw.LimitEvent)]
        assert len(limits) == 1


async def test_an_error_through_a_span_and_two_runs_is_recorded_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    broken = lw.react(name="broken", model=lw.get_model("mock", outputs=[KeyError("gone")]))

    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        async with lw.recording(name="a span of the outer run"):
            return (await lw.run(broken, q)).text

    outer = lw.get_model("mock", outputs=[call("delegate", {"q": "x"})])
    with pytest.raises(KeyError):
        await lw.run(lw.react(tools=[delegate]), "go", model=outer, db=db)
    assert sum(where(db, lw.ErrorEvent)) == 1
    [run] = lw.list_runs(db)
    assert run.status == "error" and "gone" in (run.error or "")


async def test_a_new_run_inside_a_run_records_its_own_error_and_so_does_the_outer(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"

    async def both() -> None:
        async with (
            lw.recording(name="outer", db=db),
            lw.recording(name="separate", db=db, new_run=True),
        ):
            raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await both()
    runs = {r.name: r for r in lw.list_runs(db)}
    assert runs["outer"].status == runs["separate"].status == "error"
    for run in runs.values():
        with lw.load_run(run.id, db=db) as log:
            assert sum(isinstance(e, lw.ErrorEvent) for e in log.events()) == 1


async def test_a_run_a_hook_stopped_is_stored_as_stopped(tmp_path: Path) -> None:
    class StopAtOnce(lw.Hooks):
        async def on_step_start(self, state: lw.AgentState) -> None:
            raise lw.StopRun("enough")

    db = tmp_path / "runs.db"
    state = await lw.run(thinker(), "go", db=db, hooks=[StopAtOnce()])
    assert state.completed == "stopped" and state.error == "enough"
    [run] = lw.list_runs(db)
    assert run.status == "stopped" and run.error is None
    assert lw.list_runs(db, status="stopped") == [run]


async def test_the_scope_inside_a_sample_is_the_sample(tmp_path: Path) -> None:
    async with lw.recording(db=False) as rec:
        assert lw.current_recording() is rec and rec.kind == "run"
        async with rec.sample("s1") as s:
            assert lw.current_recording() is s and s.kind == "sample"
            assert s.run is rec and s.run_id == rec.run_id
            with pytest.raises(RuntimeError, match="samples are opened on a run"):
                s.sample("s2")
        assert lw.current_recording() is rec
    assert lw.current_recording() is None


def test_nothing_marks_exceptions_or_keeps_ids() -> None:
    """The ending is recorded by ownership: no attribute set on an exception to say it
    was recorded, no table of objects by ``id()``."""
    log = SRC / "log"
    for path in [*SRC.joinpath("runtime").glob("*.py"), log / "_outcome.py", log / "_recording.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("setattr", "id"), f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("WeakValueDictionary", "WeakKeyDictionary"), path.name


async def test_what_a_sample_handles_is_not_told_to_its_run(tmp_path: Path) -> None:
    """Only what leaves a scope is passed outwards: an eval's run does not hold on to
    (the tracebacks of) the errors its samples recorded and handled."""
    model = lw.get_model("mock", outputs=[KeyError("gone")], repeat=True)
    broken = lw.react(name="broken", model=model)
    db = tmp_path / "runs.db"
    async with lw.recording(name="eval", db=db) as rec:
        for i in range(3):
            async with rec.sample(f"s{i}") as s:
                try:
                    await lw.run(broken, "go")
                except KeyError as ex:
                    s.finish(error=ex)
        assert rec._ending is not None and not rec._ending.told
    with lw.load_run(db=db) as log:
        for sample in log.samples:
            assert sample.status == "error"
            errors = [e for e in log.events(sample) if isinstance(e, lw.ErrorEvent)]
            assert len(errors) == 1


def test_a_sample_without_its_run_is_refused_when_made() -> None:
    with pytest.raises(lw.ConfigurationError, match=r"rec\.sample"):
        lw.RunScope(kind="sample")


async def test_flushing_a_nested_run_flushes_the_run_around_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(name="outer", db=db) as outer, lw.recording(name="inner") as inner:
        assert inner.nested and lw.current_recording() is inner
        lw.transcript().info("written before the flush returns")
        await inner.flush()
        with lw.load_run(outer.run_id, db=db) as log:
            infos = [e for e in log.events() if isinstance(e, lw.InfoEvent)]
        assert [i.data for i in infos] == ["written before the flush returns"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": 3}, "name must be a string"),
        ({"model": 3}, "model must be a name"),
        ({"db": 3}, "db must be a file path"),
        ({"metadata": [("a", 1)]}, "metadata must be a dict"),
        ({"log_level": "INFO"}, "log_level"),
        ({"subscribers": print}, "subscribers must be a list"),
        ({"subscribers": ["not a function"]}, "every subscriber must be a function"),
        ({"new_run": "yes"}, "new_run must be True or False"),
    ],
)
def test_what_recording_cannot_use_is_refused_when_given(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(lw.ConfigurationError, match=message):
        lw.recording(**arguments)  # type: ignore[arg-type]
