"""A run nested in another run (or in an eval sample) says how it ended once."""

from pathlib import Path

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call


def kinds(db: Path, event_type: type) -> int:
    with lw.load_run(db=db) as log:
        top = [e for e in log.tree() if isinstance(e, event_type)]
        nested = [
            e2
            for e in log.tree()
            if isinstance(e, lw.ToolEvent)
            for e2 in e.events
            if isinstance(e2, event_type)
        ]
    return len(top) + len(nested)


async def test_an_error_in_a_nested_run_is_recorded_once(tmp_path: Path) -> None:
    inner = lw.react(name="inner", model=lw.get_model("mock", outputs=[ValueError("inner bug")]))

    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        return (await lw.run(inner, q)).text

    db = tmp_path / "runs.db"
    outer = lw.get_model("mock", outputs=[call("delegate", {"q": "x"})])
    with pytest.raises(ValueError, match="inner bug"):
        await lw.run(lw.react(tools=[delegate]), "go", model=outer, db=db)
    assert kinds(db, lw.ErrorEvent) == 1


async def test_an_outer_limit_hit_in_a_nested_run_is_recorded_once(tmp_path: Path) -> None:
    inner = lw.react(
        name="inner",
        model=lw.get_model("mock", outputs=[call("think", {"thought": "x"})], repeat=True),
        tools=[lw.think()],
    )

    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        return (await lw.run(inner, q)).text

    db = tmp_path / "runs.db"
    outer = lw.get_model("mock", outputs=[call("delegate", {"q": "x"})])
    state = await lw.run(
        lw.react(tools=[delegate]), "go", model=outer, db=db, limits=[lw.step_limit(3)]
    )
    assert state.limit is not None
    assert kinds(db, lw.LimitEvent) == 1


async def test_a_bad_sandbox_or_approval_is_a_usage_error_with_no_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=["x"])
    with pytest.raises(lw.ConfigurationError):
        await lw.run(lw.react(), "t", model=model, db=db, sandbox="nosuch")
    with pytest.raises(lw.ConfigurationError):
        await lw.run(lw.react(), "t", model=model, db=db, approval="nosuch")
    assert not db.exists() or lw.list_runs(db) == []
