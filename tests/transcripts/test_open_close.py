"""``on_transcript_open`` and ``Transcript.on_close``: where a run's (or sample's)
transcript begins and ends, as tracing needs it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import loopwright as lw
from loopwright.transcripts import current_transcript, on_transcript_open


@pytest.fixture
def opened() -> Iterator[list[tuple[str, lw.Transcript, lw.Transcript | None]]]:
    """What opened and closed, with the transcript current when it opened."""
    seen: list[tuple[str, lw.Transcript, lw.Transcript | None]] = []

    def opener(t: lw.Transcript) -> None:
        seen.append(("open", t, current_transcript()))
        t.on_close(lambda: seen.append(("close", t, current_transcript())))

    stop = on_transcript_open(opener)
    try:
        yield seen
    finally:
        stop()


async def test_a_run_opens_and_closes_once_after_its_last_event(
    opened: list[tuple[str, lw.Transcript, lw.Transcript | None]],
) -> None:
    events: list[str] = []

    @lw.subtask
    async def inner() -> int:
        return 1

    async def agent(state: lw.AgentState) -> lw.AgentState:
        lw.transcript().subscribe(lambda e: events.append(e.event))
        await inner()  # a subtask within the run: not a transcript of its own to observers
        model = lw.get_model("mock", outputs=["one", "two"])
        for _ in range(2):  # the second call is over the step limit
            await model.generate([lw.UserMessage(content="go")])
        return state

    state = await lw.run(agent, "go", db=False, limits=[lw.step_limit(1)])
    assert state.completed == "limit"
    assert [kind for kind, _, _ in opened] == ["open", "close"]
    (_, t, outer), (_, closed, after) = opened
    assert t is closed and outer is None and after is None
    # the run's end (the limit) was recorded before the close
    assert events[-1] == "limit"


async def test_an_eval_sample_opens_inside_the_eval(
    opened: list[tuple[str, lw.Transcript, lw.Transcript | None]],
) -> None:
    task = lw.Task(dataset=[lw.Sample(input="x", target="y")], agent=lw.react(), name="t")
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "y"})])
    await lw.eval_async(task, model=model, db=False)
    kinds = [(kind, outer is not None) for kind, _, outer in opened]
    # the eval's transcript, then its sample's (opened while the eval's is current)
    assert kinds == [("open", False), ("open", True), ("close", True), ("close", False)]
    eval_t, sample_t = opened[0][1], opened[1][1]
    assert opened[1][2] is eval_t and sample_t is not eval_t


async def test_reentering_a_transcript_opens_it_once(
    opened: list[tuple[str, lw.Transcript, lw.Transcript | None]],
) -> None:
    t = lw.Transcript()
    with lw.transcript_context(t):
        with lw.transcript_context(t):
            pass
        assert [kind for kind, _, _ in opened] == ["open"]
    assert [kind for kind, _, _ in opened] == ["open", "close"]


def test_a_stopped_opener_hears_nothing_and_a_failing_close_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[lw.Transcript] = []
    stop = on_transcript_open(seen.append)
    stop()
    stop()  # twice is harmless
    with lw.transcript_context(lw.Transcript()):
        pass
    assert seen == []

    def broken(t: lw.Transcript) -> None:
        def fail() -> None:
            raise RuntimeError("close failed")

        t.on_close(fail)
        t.on_close(lambda: seen.append(t))

    stop = on_transcript_open(broken)
    try:
        with lw.transcript_context(lw.Transcript()):
            pass
    finally:
        stop()
    assert len(seen) == 1  # the next callback still ran
    assert "close failed" in caplog.text
