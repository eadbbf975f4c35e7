"""``lw.replay``: a recorded run run again offline (outputs and tool results from the
store), stopped at the first request that differs, or forked live at step K."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw
from loopwright.log import load_run
from loopwright.sandboxes import SandboxUnavailableError
from loopwright.transcripts import ModelEvent, SandboxEvent, ToolEvent

from . import _calls
from ._calls import CALLS  # every real call of `add`: a side effect replay must not have

call = lw.ModelOutput.for_tool_call


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    _calls.note(a, b)
    return a + b


def script() -> list[lw.ModelOutput | str]:
    return [
        call("add", {"a": 1, "b": 2}, content="first"),
        call("add", {"a": 3, "b": 4}, content="second"),
        "thinking aloud",  # no tool call: the agent asks it to go on
        call("submit", {"answer": "10"}),
    ]


def adder(**changes: object) -> lw.ReactAgent:
    options: dict[str, object] = {"name": "adder", "prompt": "You add.", "tools": [add]}
    options.update(changes)
    return lw.react(**options)  # type: ignore[arg-type]


async def record(db: Path, agent: lw.ReactAgent | None = None, **kwargs: object) -> str:
    model = lw.get_model("mock", outputs=script())
    state = await lw.run(agent or adder(), "Add things.", model=model, db=db, **kwargs)  # type: ignore[arg-type]
    assert state.run_id is not None
    return state.run_id


def shape(messages: list[lw.ChatMessage]) -> list[tuple[object, ...]]:
    return [
        (m.role, m.content, [(c.function, c.arguments) for c in getattr(m, "tool_calls", [])])
        for m in messages
    ]


async def test_the_same_agent_replays_the_run_without_calling_its_tools(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)
    assert CALLS[-2:] == [(1, 2), (3, 4)]
    CALLS.clear()
    result = await lw.replay(original, agent=adder(), db=db)
    assert CALLS == []  # answered from the store
    assert result.divergence is None and result.same
    assert (result.replayed_steps, result.recorded_steps, result.live_calls) == (4, 4, 0)
    assert result.state.text == "10" and result.state.completed == "submit"
    assert result.run_id != original
    with load_run(original, db=db) as a, load_run(result.run_id, db=db) as b:
        assert shape(b.messages()) == shape(a.messages())
        meta = b.info.metadata
        assert (meta["replay_of"], meta["until"]) == (original, None)
        assert meta["versions"] == a.info.metadata["versions"]  # the same agent and tools
        assert b.info.status == "success"
        results = [e.result.content for e in b.events() if isinstance(e, ToolEvent) and e.result]
        assert results == ["3", "7", "10"]
    # the CLI-free check of what replay is for: the same recorded model calls
    assert lw.diff_runs(original, result.run_id, db=db).divergence is None


async def test_a_changed_prompt_diverges_at_the_first_step(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)
    CALLS.clear()
    result = await lw.replay(original, agent=adder(prompt="You add, carefully."), db=db)
    d = result.divergence
    assert d is not None and (d.step, d.kind) == (1, "messages")
    assert d.recorded == "message 1 (system): You add."
    assert d.replayed == "message 1 (system): You add, carefully."
    assert d.describe() == "step 1: the messages differ"
    assert result.state.completed == "stopped" and result.replayed_steps == 0
    with load_run(result.run_id, db=db) as log:
        assert log.info.status == "stopped"
        assert not [e for e in log.events() if isinstance(e, ModelEvent)]
    assert CALLS == []


async def test_a_change_seen_only_later_diverges_at_its_step(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)
    # the nudge after the answer without a tool call (step 3) is what changed: step 4
    result = await lw.replay(original, agent=adder(on_continue="Go on, please."), db=db)
    d = result.divergence
    assert d is not None and (d.step, d.kind) == (4, "messages")
    assert "Go on, please." in d.replayed and "Go on, please." not in d.recorded
    assert result.replayed_steps == 3


async def test_a_changed_tool_or_config_is_named(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)

    @lw.tool
    def add(a: int, b: int, c: int = 0) -> int:  # the same tool, changed
        """Add two or three numbers.

        Args:
            a: First.
            b: Second.
            c: Third.
        """
        return a + b + c

    d = (await lw.replay(original, agent=adder(tools=[add]), db=db)).divergence
    assert d is not None and (d.step, d.kind) == (1, "tools")
    assert '"c"' in d.replayed and '"c"' not in d.recorded
    config = lw.GenerateConfig(temperature=0.5)
    d = (await lw.replay(original, agent=adder(config=config), db=db)).divergence
    assert d is not None and (d.step, d.kind) == (1, "config")
    assert d.recorded == '{"temperature": null}' and d.replayed == '{"temperature": 0.5}'


async def test_an_agent_that_goes_on_longer_diverges_where_the_recording_ends(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    original = await record(db, adder(max_steps=2))  # recorded: cut by its step bound
    result = await lw.replay(original, agent=adder(max_steps=5), db=db)
    d = result.divergence
    assert d is not None and (d.step, d.kind) == (3, "steps")
    assert result.state.completed == "stopped"


async def test_fork_at_step_k_with_another_prompt_goes_on_live(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)
    CALLS.clear()
    live = lw.get_model(
        "mock",
        outputs=[call("add", {"a": 100, "b": 1}), call("submit", {"answer": "forked"})],
    )
    result = await lw.replay(
        original, agent=adder(prompt="You add, carefully."), db=db, until=2, model=live
    )
    assert CALLS == [(100, 1)]  # steps 1-2 from the store, step 3 live
    assert result.state.text == "forked"
    assert (result.replayed_steps, result.live_calls) == (2, 2)
    d = result.divergence  # noted, not stopped on
    assert d is not None and (d.step, d.kind) == (1, "messages")
    messages = result.state.messages
    assert messages[0].content == "You add, carefully."
    texts = [m.content for m in messages if m.role == "tool"]
    assert texts == ["3", "7", "101", "forked"]
    with load_run(result.run_id, db=db) as log:
        assert (log.info.metadata["replay_of"], log.info.metadata["until"]) == (original, 2)
        models = [e.model for e in log.events() if isinstance(e, ModelEvent)]
        assert models[:2] == [f"replay/{original}"] * 2 and models[2:] == ["mock"] * 2


async def test_an_agent_calling_a_model_of_its_own_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)

    async def sneaky(state: lw.AgentState) -> lw.AgentState:
        own = lw.get_model("mock", outputs=["online"])
        state.output = await own.generate(state.messages)
        return state

    with pytest.raises(lw.ConfigurationError, match="would not be offline"):
        await lw.replay(original, agent=sneaky, db=db)
    with pytest.raises(lw.ConfigurationError, match="until must be"):
        await lw.replay(original, agent=adder(), db=db, until=-1)


@pytest.mark.parametrize("backend", ["bwrap", "local"])
async def test_a_run_with_sandboxed_tools_replays_without_touching_the_sandbox(
    tmp_path: Path, backend: str
) -> None:
    db = tmp_path / "runs.db"
    outputs = [
        call("bash", {"cmd": "echo made > f.txt && cat f.txt && echo $((6*7))"}),
        call("submit", {"answer": "42"}),
    ]
    agent = lw.react(name="sh", tools=[lw.bash()])
    model = lw.get_model("mock", outputs=outputs)
    try:
        state = await lw.run(agent, "Make a file.", model=model, db=db, sandbox=backend)
    except SandboxUnavailableError as ex:
        pytest.skip(f"{backend} sandbox unavailable: {ex}")
    assert state.run_id is not None
    result = await lw.replay(state.run_id, agent=agent, db=db, sandbox=backend)
    assert result.same and result.state.text == "42"
    with load_run(state.run_id, db=db) as a, load_run(result.run_id, db=db) as b:
        recorded = [e for e in a.events() if isinstance(e, SandboxEvent)]
        replayed = [e for e in b.events() if isinstance(e, SandboxEvent)]
        assert [e.action for e in recorded] == ["exec"] and replayed == []

        def outputs_of(log: lw.RunLog) -> list[str]:
            return [e.result.content for e in log.events() if isinstance(e, ToolEvent) and e.result]

        assert outputs_of(b) == outputs_of(a)
        assert "made" in outputs_of(b)[0] and "42" in outputs_of(b)[0]


async def test_an_agent_that_ends_sooner_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    original = await record(db)
    result = await lw.replay(original, agent=adder(stop_keywords="aloud"), db=db)
    assert result.state.completed == "stop_keyword"
    d = result.divergence
    assert d is not None and (d.step, d.kind) == (4, "steps")
    assert d.recorded == "4 steps" and d.replayed == "the agent ended after 3 steps"


async def test_several_calls_in_one_reply_are_answered_in_order(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    both = lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 1})
    both.message.tool_calls.append(lw.ToolCall(function="add", arguments={"a": 2, "b": 2}))
    both.message.tool_calls.append(lw.ToolCall(function="add", arguments={"a": 1, "b": 1}))
    model = lw.get_model("mock", outputs=[both, call("submit", {"answer": "done"})])
    state = await lw.run(adder(), "Add twice.", model=model, db=db)
    assert state.run_id is not None
    CALLS.clear()
    result = await lw.replay(state.run_id, agent=adder(), db=db)
    assert result.same and CALLS == []
    assert [m.content for m in result.state.messages if m.role == "tool"] == [
        "2",
        "4",
        "2",
        "done",
    ]


async def test_a_recorded_call_that_raised_ends_the_replay_there(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    @lw.tool
    def broken(x: int) -> int:
        """Fail.

        Args:
            x: Anything.
        """
        raise RuntimeError(f"bug {x}")

    outputs = [call("broken", {"x": 1}), call("submit", {"answer": "never"})]
    agent = adder(tools=[broken])
    with pytest.raises(RuntimeError, match="bug 1"):
        await lw.run(agent, "Break.", model=lw.get_model("mock", outputs=outputs), db=db)
    [info] = lw.list_runs(db)
    result = await lw.replay(info.id, agent=agent, db=db)
    d = result.divergence
    assert d is not None and (d.step, d.kind) == (1, "tool_call")
    assert "RuntimeError: bug 1" in d.replayed
    assert result.state.completed == "stopped"


async def test_a_sample_of_an_eval_replays_with_its_own_input(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    samples = [lw.Sample(id="s1", input="What is 1+2?", target="3")]
    outputs = [call("add", {"a": 1, "b": 2}), call("submit", {"answer": "3"})]
    task = lw.Task(samples, agent=adder(), scorer=lw.match("numeric"), name="sums")
    [result] = await lw.eval_async(task, model=lw.get_model("mock", outputs=outputs), db=db)
    CALLS.clear()
    replayed = await lw.replay(result.run_id, agent=adder(), db=db, sample="s1")
    assert replayed.same and CALLS == [] and replayed.state.text == "3"
    assert replayed.replayed_steps == 2
    with load_run(replayed.run_id, db=db) as log:
        assert log.info.input == "What is 1+2?"
        assert log.info.metadata["sample"] == "s1"


async def test_a_recorded_model_config_compares_equal_when_that_model_is_given(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    warm = lw.GenerateConfig(temperature=0.3)
    model = lw.get_model("mock", outputs=script(), config=warm)
    state = await lw.run(adder(), "Add things.", model=model, db=db)
    assert state.run_id is not None
    d = (await lw.replay(state.run_id, agent=adder(), db=db)).divergence
    assert d is not None and (d.step, d.kind) == (1, "config")  # the model's config is gone
    again = await lw.replay(
        state.run_id, agent=adder(), db=db, model=lw.get_model("mock", config=warm)
    )
    assert again.same and again.live_calls == 0


async def test_an_agent_with_a_model_of_its_own_keeps_its_version(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    agent = adder(model=lw.get_model("mock", outputs=script()))
    state = await lw.run(agent, "Add things.", db=db)
    assert state.run_id is not None
    CALLS.clear()
    result = await lw.replay(state.run_id, agent=agent, db=db)  # its model replaced
    assert result.same and CALLS == [] and result.state.text == "10"
    with load_run(state.run_id, db=db) as a, load_run(result.run_id, db=db) as b:
        assert b.info.metadata["versions"] == a.info.metadata["versions"]


async def test_a_handoff_replays_the_agent_handed_to_from_the_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    helper = adder(name="helper", prompt="You help.")

    def boss() -> lw.ReactAgent:
        return lw.react(name="boss", prompt="You delegate.", tools=[lw.handoff(helper)])

    outputs = [
        call("transfer_to_helper", {}),
        call("add", {"a": 5, "b": 5}),
        call("submit", {"answer": "10"}),
    ]
    state = await lw.run(boss(), "5+5", model=lw.get_model("mock", outputs=outputs), db=db)
    assert state.run_id is not None and CALLS[-1] == (5, 5)
    CALLS.clear()
    result = await lw.replay(state.run_id, agent=boss(), db=db)
    assert result.same and result.replayed_steps == 3 and result.state.text == "10"
    assert CALLS == []
