import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import pytest

import loopwright as lw

call = lw.ModelOutput.for_tool_call


@lw.tool
def note(text: str) -> str:
    """Write a note.

    Args:
        text: The note.
    """
    return f"noted: {text}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_nudge_is_sent_every_step_and_never_persisted() -> None:
    requests: list[list[str]] = []

    def responder(msgs: Sequence[lw.ChatMessage], tools: object, config: object) -> lw.ModelOutput:
        requests.append([m.text for m in msgs])
        return call("note", {"text": str(len(requests))})

    agent = lw.iterative(tools=[note], max_steps=3, nudge="NUDGE {remaining}")
    state = await lw.run(agent, "task", model=lw.get_model("mock", outputs=responder))
    assert len(requests) == 3
    assert all(r[-1] == "NUDGE unlimited" for r in requests)
    assert not any(m.text.startswith("NUDGE") for m in state.messages)
    assert state.limit is not None
    assert state.limit.type == "step"
    assert [m.role for m in state.messages] == ["user"] + ["assistant", "tool"] * 3


async def test_time_budget_with_an_injected_clock() -> None:
    clock = FakeClock()
    budgets: list[float | None] = []

    @contextlib.asynccontextmanager
    async def recording_timeout(seconds: float | None) -> AsyncIterator[None]:
        budgets.append(seconds)
        yield

    def responder(msgs: object, tools: object, config: object) -> lw.ModelOutput:
        clock.now += 40  # each model call "takes" 40 s
        return call("note", {"text": "x"})

    agent = lw.iterative(
        tools=[note], time_limit=100, clock=clock, timeout_factory=recording_timeout
    )
    state = await lw.run(agent, "task", model=lw.get_model("mock", outputs=responder))
    assert state.completed == "limit"
    assert state.limit is not None
    assert state.limit.type == "time"
    assert clock.now == 120  # steps at t=0, 40, 80; stopped at 120
    # each model call and each tool execution got the remaining budget as timeout
    assert budgets == [100, 100, 60, 60, 20, 20]


async def test_productive_time_excludes_retry_waits() -> None:
    def script() -> list[lw.ModelOutput | str | BaseException]:
        return [
            lw.ModelAPIError("busy", retryable=True, retry_after=0.4),
            lw.ModelAPIError("busy", retryable=True, retry_after=0.4),
            call("note", {"text": "x"}),
            call("submit", {"answer": "done"}),
        ]

    from loopwright.tool.builtin import submit

    tools = [note, submit]
    productive = lw.iterative(tools=tools, time_limit=0.6, productive_time=True)
    state = await lw.run(productive, "task", model=lw.get_model("mock", outputs=script()))
    assert state.completed == "submit"
    wall = lw.iterative(tools=tools, time_limit=0.6)
    state = await lw.run(wall, "task", model=lw.get_model("mock", outputs=script()))
    assert state.completed == "limit"


async def test_stop_keyword_and_progress_info(caplog: pytest.LogCaptureFixture) -> None:
    outputs: list[lw.ModelOutput | str] = [call("note", {"text": str(i)}) for i in range(4)]
    outputs.append("FINISHED here")
    agent = lw.iterative(tools=[note], stop_keywords=["finished"], progress_every=2)
    with caplog.at_level(logging.INFO, logger="loopwright.agent"):
        state = await lw.run(agent, "task", model=lw.get_model("mock", outputs=outputs))
    assert state.completed == "stop_keyword"
    assert state.text == "FINISHED here"
    progress = [r for r in caplog.records if "iterative agent: step" in r.getMessage()]
    assert [r.getMessage().split(",")[0] for r in progress] == [
        "iterative agent: step 2",
        "iterative agent: step 4",
    ] or progress == []  # a transcript, when present, takes the info lines instead
