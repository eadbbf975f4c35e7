import asyncio
from collections.abc import Sequence

import pytest

import loopwright as lw


def conversation(state: lw.AgentState) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in state.messages]


@lw.subtask
async def research(topic: str, depth: int = 1) -> dict[str, object]:
    assert "run-key" not in lw.store()  # the subtask's store starts empty
    lw.store().set("topic", topic)
    lw.transcript().info(f"researching {topic}")
    await asyncio.sleep(0.01 * depth)
    return {"topic": topic, "links": depth}


@lw.subtask(name="explode")
async def failing() -> None:
    lw.transcript().info("about to fail")
    raise RuntimeError("nope")


async def test_a_subtask_has_its_own_store_and_transcript_and_lands_as_one_event() -> None:
    t = lw.Transcript()
    run_store = lw.Store({"run-key": 1})
    with lw.store_context(run_store), lw.transcript_context(t):
        result = await research("llamas", depth=2)
        assert lw.transcript() is t and lw.store() is run_store
    assert result == {"topic": "llamas", "links": 2}
    assert "topic" not in run_store
    # the run store's pending change is recorded before the subtask starts
    run_changes, ev = t.events
    assert isinstance(run_changes, lw.StoreEvent) and run_changes.store == run_store.id
    assert isinstance(ev, lw.SubtaskEvent)
    assert (ev.name, ev.type) == ("research", "subtask")
    assert ev.input == {"topic": "llamas", "depth": 2}
    assert ev.result == {"topic": "llamas", "links": 2}
    assert ev.error is None and ev.pending is None and ev.duration >= 0.02
    assert [e.event for e in ev.events] == ["info", "store"]
    assert all(e.span_id == ev.id for e in ev.events)
    store_ev = ev.events[1]
    assert isinstance(store_ev, lw.StoreEvent)
    assert store_ev.changes == [{"op": "add", "path": "/topic", "value": "llamas"}]
    assert store_ev.store != run_store.id


async def test_parallel_subtasks_keep_their_events_apart() -> None:
    t = lw.Transcript()
    notified: list[tuple[str, bool | None]] = []
    t.subscribe(lambda e: notified.append((e.event, getattr(e, "pending", None))))
    run_store = lw.Store({"run-key": 1})
    run_store.checkpoint()
    with lw.store_context(run_store), lw.transcript_context(t):
        results = await asyncio.gather(research("a", 3), research("b", 1), research("c", 2))
    assert [r["topic"] for r in results] == ["a", "b", "c"]
    assert [e.input["topic"] for e in t.events if isinstance(e, lw.SubtaskEvent)] == [
        "a",
        "b",
        "c",
    ]
    for ev in t.events:
        assert isinstance(ev, lw.SubtaskEvent)
        info = ev.events[0]
        assert isinstance(info, lw.InfoEvent) and info.data == f"researching {ev.input['topic']}"
    # nested events reach the run's subscribers as they happen
    assert notified.count(("subtask", True)) == 3 and notified.count(("info", None)) == 3


async def test_a_failing_subtask_records_its_error_and_raises() -> None:
    t = lw.Transcript()
    with lw.transcript_context(t), pytest.raises(RuntimeError, match="nope"):
        await failing()
    [ev] = t.events
    assert isinstance(ev, lw.SubtaskEvent)
    assert ev.name == "explode" and ev.error == "RuntimeError: nope" and ev.pending is None
    assert [e.event for e in ev.events] == ["info"]


async def test_a_subtask_outside_any_transcript_still_runs_isolated() -> None:
    assert await research("solo") == {"topic": "solo", "links": 1}


def test_subtask_needs_an_async_function() -> None:
    with pytest.raises(TypeError, match="async function"):
        lw.subtask(lambda: 1)  # type: ignore[arg-type]


# --- fork ---------------------------------------------------------------------------------
def echo_agent(tag: str, steps: int = 2) -> lw.Agent:
    """A stand-in agent following the contract: a mock model answering deterministically."""
    model = lw.get_model(
        "mock", outputs=lambda messages, tools, config: f"{tag} saw {len(messages)} messages"
    )

    async def agent(state: lw.AgentState) -> lw.AgentState:
        for _ in range(steps):
            out = await model.generate(state.messages)
            state.messages.append(out.message)
            state.output = out
            lw.store().set(f"{tag}-steps", len(state.messages))
        return state

    agent.__name__ = tag
    return agent


async def run_fork(agents: Sequence[lw.Agent]) -> tuple[list[lw.AgentState], lw.Transcript]:
    state = lw.AgentState(messages=[lw.UserMessage(content="Plan a trip.")])
    t = lw.Transcript()
    with lw.store_context(lw.Store({"budget": 100})), lw.transcript_context(t):
        branches = await lw.fork(state, agents)
        assert lw.store().to_dict() == {"budget": 100}  # branches' writes stay in branches
    assert conversation(state) == [("user", "Plan a trip.")]  # the original is untouched
    return branches, t


async def test_fork_runs_each_agent_on_its_own_copy_in_order_deterministically() -> None:
    first, t = await run_fork([echo_agent("cautious", 1), echo_agent("bold", 3)])
    second, _ = await run_fork([echo_agent("cautious", 1), echo_agent("bold", 3)])
    assert [conversation(s) for s in first] == [conversation(s) for s in second]
    assert conversation(first[0]) == [
        ("user", "Plan a trip."),
        ("assistant", "cautious saw 1 messages"),
    ]
    assert conversation(first[1])[-1] == ("assistant", "bold saw 3 messages")
    assert first[0].messages[0] is not first[1].messages[0]
    events = [e for e in t.events if isinstance(e, lw.SubtaskEvent)]
    assert [(e.name, e.type, e.input) for e in events] == [
        ("cautious", "fork", {"branch": 0, "messages": 1}),
        ("bold", "fork", {"branch": 1, "messages": 1}),
    ]
    assert events[1].result == {
        "messages": 4,
        "completed": None,
        "output": "bold saw 3 messages",
    }
    # each branch starts from a copy of the run's store: recorded before its first step
    assert [e.event for e in events[1].events] == ["store"] + ["model", "store"] * 3
    first_store = events[0].events[0]
    assert isinstance(first_store, lw.StoreEvent)
    assert {"op": "add", "path": "/budget", "value": 100} in first_store.changes


async def test_fork_with_react_agents_and_a_single_agent() -> None:
    def agent(tag: str) -> lw.Agent:
        model = lw.get_model("mock", outputs=lambda m, t, c: f"{tag}: done")
        return lw.react(name=tag, model=model, submit=False)

    branches, t = await run_fork([agent("x"), agent("y")])
    assert [b.text for b in branches] == ["x: done", "y: done"]
    assert [e.name for e in t.events if isinstance(e, lw.SubtaskEvent)] == ["x", "y"]
    single, _ = await run_fork(agent("z"))  # type: ignore[arg-type]
    assert isinstance(single, lw.AgentState) and single.text == "z: done"


async def test_a_failing_branch_fails_the_fork() -> None:
    async def broken(state: lw.AgentState) -> lw.AgentState:
        raise ValueError("branch broke")

    t = lw.Transcript()
    with lw.transcript_context(t), pytest.raises(ValueError, match="branch broke"):
        await lw.fork(lw.AgentState(), [echo_agent("ok"), broken])
    errors = [e.error for e in t.events if isinstance(e, lw.SubtaskEvent)]
    assert "ValueError: branch broke" in errors


async def test_a_subtask_s_given_input_must_be_json() -> None:
    """The event (a plain dataclass) does not validate it: ``run_subtask`` does, as the
    pydantic event did, before the run store could fail to write it."""
    from pydantic import ValidationError

    from loopwright.transcripts import run_subtask

    async def work() -> None:
        return None

    async with lw.recording(db=False) as rec:
        with pytest.raises(ValidationError):
            await run_subtask(work, input={"x": object()})  # type: ignore[dict-item]
        await run_subtask(work, input={"x": [1, {"y": None}]})
    [ev] = [e for e in rec.transcript.events if isinstance(e, lw.SubtaskEvent)]
    assert ev.input == {"x": [1, {"y": None}]}
