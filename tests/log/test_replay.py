from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model.providers.replay import ReplayExhaustedError

from ._scripted import hand_loop, script, shape


async def test_replay_reproduces_a_runs_messages_exactly(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    recorded_model = lw.get_model("mock", outputs=script(6))
    async with lw.recording(db=db) as rec:
        original, _ = await hand_loop(recorded_model)
        rec.finish(messages=original)

    replay = lw.get_model("replay", run=rec.run_id, db=db)
    async with lw.recording(db=db) as again:
        replayed, _ = await hand_loop(replay)
        again.finish(messages=replayed)
    assert shape(replayed) == shape(original)
    # new messages, same content: both runs are stored side by side
    assert {m.id for m in replayed if m.role == "assistant"}.isdisjoint(
        m.id for m in original if m.role == "assistant"
    )
    with lw.load_run(again.run_id, db) as log:
        assert shape(log.messages()) == shape(original)
        assert log.store() == {"sums": [1, 2, 3, 4, 5]}
    with pytest.raises(ReplayExhaustedError, match="all were replayed"):
        await replay.generate([lw.UserMessage(content="one more")])


async def test_replay_from_an_export_and_by_model_name(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        original, _ = await hand_loop(lw.get_model("mock", outputs=script(3)))
    path = lw.export_run(rec.run_id, tmp_path / "run.json", db=db)
    from_file, _ = await hand_loop(lw.get_model("replay", run=str(path)))
    assert shape(from_file) == shape(original)
    by_name, _ = await hand_loop(lw.get_model(f"replay/{rec.run_id}", db=db))
    assert shape(by_name) == shape(original)


async def test_replay_of_a_sample_and_bad_arguments(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec, rec.sample("only"):
        original, _ = await hand_loop(lw.get_model("mock", outputs=script(2)))
    replayed, _ = await hand_loop(lw.get_model("replay", run=rec.run_id, db=db, sample="only"))
    assert shape(replayed) == shape(original)
    with pytest.raises(lw.ConfigurationError, match="which run to replay"):
        lw.get_model("replay")
    missing = lw.get_model("replay", run="nope", db=db)
    with pytest.raises(lw.RunStoreError, match="no run 'nope'"):
        await missing.generate([lw.UserMessage(content="hi")])


async def test_replay_reproduces_a_react_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    @lw.tool
    def multiply(a: int, b: int) -> int:
        """Multiply.

        Args:
            a: The first factor.
            b: The second factor.
        """
        return a * b

    agent = lw.react(prompt="You multiply.", tools=[multiply])
    scripted = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("multiply", {"a": 465, "b": 321}, content="Multiply."),
            lw.ModelOutput.for_tool_call("submit", {"answer": "149265"}),
        ],
    )
    first = await lw.run(agent, "What is 465 * 321?", model=scripted, db=db)
    [recorded] = lw.list_runs(db)
    again = await lw.run(
        agent, "What is 465 * 321?", model=lw.get_model("replay", run=recorded.id, db=db), db=db
    )
    assert again.text == first.text == "149265"
    assert shape(again.messages) == shape(first.messages)
    with lw.load_run(None, db) as log:
        assert log.info.status == "success"
        assert shape(log.messages()) == shape(first.messages)


async def test_the_provider_replays_outputs_it_is_given(tmp_path: Path) -> None:
    """model/ replays what it is given; reading the run store is log/'s (the registry's
    ``replay`` factory lives there, so model/ never imports log/)."""
    from loopwright.log._replay import recorded_outputs
    from loopwright.model.providers.replay import ReplayModelAPI

    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        original, _ = await hand_loop(lw.get_model("mock", outputs=script(3)))
        rec.finish(messages=original)
    outputs = recorded_outputs(rec.run_id, db)
    assert [o.message.text for o in outputs] == ["step 0", "step 1", "done after 3 steps"]
    given = lw.Model(ReplayModelAPI("given", outputs))
    replayed, _ = await hand_loop(given)
    assert shape(replayed) == shape(original)
    assert isinstance(lw.get_model("replay", run=rec.run_id, db=db).api, ReplayModelAPI)
