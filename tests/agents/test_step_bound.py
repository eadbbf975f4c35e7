"""The standard agents are never unbounded by accident (issue 15, item 1): without a step
bound of their own or one in force around them they stop after DEFAULT_MAX_STEPS model
calls, as a limit; the bound can be raised or lifted explicitly."""

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call


def steps(state: lw.AgentState) -> int:
    return sum(1 for m in state.messages if m.role == "assistant")


def talker(before_submit: int | None = None) -> lw.Model:
    """A model that never calls a tool (or submits after ``before_submit`` replies)."""
    if before_submit is None:
        return lw.get_model("mock")  # its default text, forever
    return lw.get_model(
        "mock", outputs=[*["still thinking"] * before_submit, call("submit", {"answer": "done"})]
    )


def test_the_default_is_a_public_documented_constant() -> None:
    assert lw.DEFAULT_MAX_STEPS == 25
    assert "DEFAULT_MAX_STEPS" in (lw.react.__doc__ or "")


async def test_react_that_never_submits_stops_at_the_default_bound_as_a_limit() -> None:
    began = time.monotonic()
    # the time limit only keeps the test bounded on the old code (which looped until it)
    state = await lw.run(lw.react(), "go", model=talker(), db=False, limits=[lw.time_limit(20)])
    assert time.monotonic() - began < 10
    assert state.completed == "limit"
    assert state.limit is not None
    assert state.limit.type == "step"
    assert state.limit.limit == lw.DEFAULT_MAX_STEPS
    assert steps(state) == lw.DEFAULT_MAX_STEPS
    assert "max_steps" in state.limit.message  # says where the bound came from


async def test_max_steps_raises_or_lifts_the_bound() -> None:
    more = lw.DEFAULT_MAX_STEPS + 10
    state = await lw.run(lw.react(max_steps=more), "go", model=talker(), db=False)
    assert state.completed == "limit"
    assert steps(state) == more

    state = await lw.run(lw.react(max_steps=None), "go", model=talker(more), db=False)
    assert state.completed == "submit"
    assert steps(state) == more + 1


async def test_a_step_limit_in_force_replaces_the_default() -> None:
    more = lw.DEFAULT_MAX_STEPS + 10
    limits = [lw.step_limit(more + 5)]
    state = await lw.run(lw.react(), "go", model=talker(more), limits=limits, db=False)
    assert state.completed == "submit"
    assert steps(state) == more + 1

    with lw.step_limit(3):
        state = await lw.run(lw.react(), "go", model=talker(), db=False)
    assert state.limit is not None and state.limit.limit == 3
    assert "max_steps" not in state.limit.message  # the user's own limit


async def test_an_agent_used_as_a_tool_runs_within_its_callers_bound() -> None:
    def responder(
        msgs: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: object
    ) -> lw.ModelOutput | str:
        # the outer agent (offered the helper) calls it; the helper only talks
        if "helper" in [t.name for t in tools]:
            return call("helper", {"input": "work"})
        return "still thinking"

    helper = lw.as_tool(lw.react(name="helper"))
    state = await lw.run(
        lw.react(tools=[helper]), "go", model=lw.get_model("mock", outputs=responder), db=False
    )
    # one bound for the whole run: the helper's steps counted against the outer agent's
    assert state.completed == "limit"
    assert state.limit is not None and state.limit.limit == lw.DEFAULT_MAX_STEPS


async def test_iterative_without_a_budget_has_the_default_bound() -> None:
    state = await lw.run(lw.iterative(progress_every=None), "go", model=talker(), db=False)
    assert state.completed == "limit"
    assert state.limit is not None and state.limit.type == "step"
    assert steps(state) == lw.DEFAULT_MAX_STEPS
    assert "max_steps" in state.limit.message


async def test_iterative_with_a_time_budget_is_bounded_by_it_not_by_the_default() -> None:
    more = lw.DEFAULT_MAX_STEPS + 10
    model = lw.get_model("mock", outputs=[*["working"] * more, "DONE"])
    agent = lw.iterative(time_limit=3600, stop_keywords="DONE", progress_every=None)
    state = await lw.run(agent, "go", model=model, db=False)
    assert state.completed == "stop_keyword"
    assert steps(state) == more + 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "25"])
def test_a_bad_max_steps_is_refused_when_the_agent_is_made(bad: object) -> None:
    with pytest.raises(lw.ConfigurationError, match="max_steps must be"):
        lw.react(max_steps=bad)  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="max_steps must be"):
        lw.iterative(max_steps=bad)  # type: ignore[arg-type]


async def test_the_default_bound_is_recorded_as_a_limit_like_any_other(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    state = await lw.run(lw.react(), "go", model=talker(), db=db)
    assert state.run_id is not None
    with lw.load_run(state.run_id, db=db) as log:
        info = log.info
    assert info.status == "limit"
    assert info.limit is not None and info.limit["type"] == "step"
    assert info.limit["limit"] == lw.DEFAULT_MAX_STEPS
