import logging
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import loopwright as lw
import loopwright.limits
from loopwright.log import load_run
from loopwright.transcripts import InfoEvent

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


async def test_time_budget_with_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    # the budget is a time limit: its clock is the limits module's (the event loop's
    # own timer, real time, never fires in this test)
    monkeypatch.setattr(loopwright.limits, "time", SimpleNamespace(monotonic=clock))
    budgets: list[float | None] = []

    @lw.tool
    def timed(text: str) -> str:
        """Write a note.

        Args:
            text: The note.
        """
        budgets.append(lw.remaining_time())
        return text

    def responder(msgs: object, tools: object, config: object) -> lw.ModelOutput:
        budgets.append(lw.remaining_time())
        clock.now += 40  # each model call "takes" 40 s
        return call("timed", {"text": "x"})

    agent = lw.iterative(tools=[timed], time_limit=100)
    state = await lw.run(agent, "task", model=lw.get_model("mock", outputs=responder))
    assert state.completed == "limit"
    assert state.limit is not None
    assert state.limit.type == "time"
    assert clock.now == 120  # steps at t=0, 40, 80; stopped at 120
    # each model call and each tool execution had the budget left when it started
    # (the model call's 40 s are not granted again to the tools)
    assert budgets == [100, 60, 60, 20, 20, 0]


async def test_productive_time_excludes_retry_waits() -> None:
    def script() -> list[lw.ModelOutput | str | BaseException]:
        return [
            lw.ModelAPIError("busy", retryable=True, retry_after=0.4),
            lw.ModelAPIError("busy", retryable=True, retry_after=0.4),
            call("note", {"text": "x"}),
            call("submit", {"answer": "done"}),
        ]

    from loopwright.tools.builtin import submit

    tools = [note, submit()]
    productive = lw.iterative(tools=tools, time_limit=0.6, productive_time=True)
    state = await lw.run(productive, "task", model=lw.get_model("mock", outputs=script()))
    assert state.completed == "submit"
    wall = lw.iterative(tools=tools, time_limit=0.6)
    state = await lw.run(wall, "task", model=lw.get_model("mock", outputs=script()))
    assert state.completed == "limit"


async def test_productive_time_holds_the_model_calls_timeout_while_it_waits() -> None:
    from loopwright.model import ModelCall, model_hook
    from loopwright.tools.builtin import submit

    calls: list[ModelCall] = []

    class Count:
        def before_generate(self, c: ModelCall) -> None:
            calls.append(c)

        def after_generate(self, c: ModelCall) -> None:
            pass

    script: list[lw.ModelOutput | str | BaseException] = [
        lw.ModelAPIError("busy", retryable=True, retry_after=0.5),  # longer than the budget
        call("submit", {"answer": "done"}),
    ]
    agent = lw.iterative(tools=[note, submit()], time_limit=0.3, productive_time=True)
    with model_hook(Count()):
        state = await lw.run(agent, "task", model=lw.get_model("mock", outputs=script))
    assert state.completed == "submit"
    # one call that waited and then answered, not one cut off by a wall-clock timeout
    # (0.3 s) and a second call for the answer
    assert len(calls) == 1
    assert calls[0].retries == 1 and calls[0].error is None
    assert calls[0].wait_time >= 0.45


async def test_stop_keyword_and_progress_info(tmp_path: Path) -> None:
    outputs: list[lw.ModelOutput | str] = [call("note", {"text": str(i)}) for i in range(4)]
    outputs.append("FINISHED here")
    agent = lw.iterative(tools=[note], stop_keywords=["finished"], progress_every=2)
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=outputs)
    state = await lw.run(agent, "task", model=model, db=db)
    assert state.completed == "stop_keyword"
    assert state.text == "FINISHED here"
    with load_run(db=db) as log:
        infos = [e.data for e in log.events() if isinstance(e, InfoEvent)]
    assert [str(i).split(",")[0] for i in infos] == [
        "iterative agent: step 2",
        "iterative agent: step 4",
    ]


async def test_progress_goes_to_logging_without_a_transcript(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = lw.get_model("mock", outputs=[call("note", {"text": "x"})], repeat=True)
    agent = lw.iterative(tools=[note], max_steps=2, progress_every=1, model=model)
    with caplog.at_level(logging.INFO, logger="loopwright.agents"):
        await agent(lw.AgentState(messages=[lw.UserMessage(content="t")]))  # no run()
    progress = [r.getMessage() for r in caplog.records if "iterative agent: step" in r.getMessage()]
    assert len(progress) == 2


async def test_a_wait_that_begins_after_the_working_limit_fired_leaves_it_alone() -> None:
    """productive_time: a model call (in a parallel tool) that starts to wait just after
    the working-time budget ran out, before the cancellation reached it, must not touch
    the budget's timer (nor restart it)."""
    import asyncio
    import time

    from loopwright.limits import LimitExceededError, working_limit

    budget: list[Any] = []
    seen: list[str] = []

    class _Busy(lw.ModelAPI):
        provider = "busy-after-the-timeout"
        model_name = ""

        async def generate(self, *_: object) -> lw.ModelOutput:
            loop = asyncio.get_running_loop()
            reply: asyncio.Future[lw.ModelOutput] = loop.create_future()
            error = lw.ModelAPIError("busy", retryable=True, retry_after=1.0)
            when = budget[0]._timer.when()
            loop.call_at(when - 0.001, reply.set_exception, error)
            return await reply

    model = lw.Model(_Busy())

    @lw.tool(parallel=True)
    async def ask() -> str:
        """Ask the model."""
        try:
            return (await model.generate([lw.UserMessage(content="hi")])).text
        except BaseException as ex:
            seen.append(type(ex).__name__)
            raise

    @lw.tool(parallel=True)
    async def work() -> str:
        """Work past the deadline."""
        await asyncio.sleep(0.25)
        time.sleep(0.1)  # noqa: ASYNC251 - busy across the deadline: both timers due at once
        await asyncio.sleep(10)
        return "done"

    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="ask"), lw.ToolCall(function="work")]
    )

    async def tools_within_a_budget() -> None:
        with working_limit(0.3) as limit:
            budget.append(limit)
            await lw.execute_tools(message, [ask, work])

    with pytest.raises(LimitExceededError):
        await tools_within_a_budget()
    assert seen == ["CancelledError"]  # cancelled by the budget, not a RuntimeError
    assert not budget[0].waits.waiting_now
