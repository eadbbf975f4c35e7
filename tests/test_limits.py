import asyncio
import time

import pytest

import loopwright as lw
from loopwright.limits import (
    LimitExceededError,
    check_limits,
    message_limit,
    remaining_time,
    step_limit,
    time_limit,
    token_limit,
    working_limit,
)

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]


def scripted(n: int = 50) -> lw.Model:
    return lw.get_model("mock", outputs=["a reply of some length"] * n)


async def test_step_limit_allows_n_calls_then_raises() -> None:
    model = scripted()
    with step_limit(3):
        for _ in range(3):
            await model.generate(HI)
        with pytest.raises(LimitExceededError) as info:
            await model.generate(HI)
    assert info.value.type == "step"
    assert info.value.info.limit == 3
    await model.generate(HI)  # outside the scope: no limit


async def test_token_limit_counts_usage_and_stops_the_next_call() -> None:
    model = scripted()
    with token_limit(30) as limit:
        await model.generate(HI)
        first = limit.used
        assert first > 0
        while limit.used < 30:
            await model.generate(HI)
        with pytest.raises(LimitExceededError) as info:
            await model.generate(HI)
    assert info.value.type == "token"
    assert info.value.value >= 30


async def test_message_limit_checks_the_conversation_size() -> None:
    model = scripted()
    with message_limit(2):
        await model.generate([*HI, lw.AssistantMessage(content="x")])
        with pytest.raises(LimitExceededError, match="message limit reached"):
            await model.generate([*HI, lw.AssistantMessage(content="x"), *HI])


async def test_nested_limits_take_the_tightest_and_outer_counts_inner_work() -> None:
    model = scripted()
    with step_limit(5) as outer:
        with step_limit(2):
            await model.generate(HI)
            await model.generate(HI)
            with pytest.raises(LimitExceededError) as info:
                await model.generate(HI)
            assert info.value.limit.limit == 2
        assert outer.used == 2
        await model.generate(HI)
        await model.generate(HI)
        await model.generate(HI)
        with pytest.raises(LimitExceededError) as info:
            await model.generate(HI)
        assert info.value.limit is outer


async def test_time_limit_cancels_a_model_call_in_flight() -> None:
    async def slow(*_: object) -> str:
        await asyncio.sleep(30)
        return "late"

    model = lw.get_model("mock", outputs=slow)
    start = time.monotonic()
    with pytest.raises(LimitExceededError) as info, time_limit(0.2):
        await model.generate(HI)
    assert info.value.type == "time"
    assert time.monotonic() - start < 10


async def test_a_fired_time_limit_is_gone_after_its_scope() -> None:
    from loopwright.limits import active_limits

    with pytest.raises(LimitExceededError), time_limit(0.05):
        await asyncio.sleep(5)
    assert active_limits() == ()
    assert (await scripted().generate(HI)).text  # no stale limit vetoes later calls


async def test_time_limit_does_not_swallow_foreign_cancellation() -> None:
    async def body() -> None:
        with time_limit(30):
            await asyncio.sleep(30)

    task = asyncio.create_task(body())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_working_limit_does_not_count_retry_waits() -> None:
    def failing_then_ok() -> lw.Model:
        return lw.get_model(
            "mock",
            outputs=[
                lw.ModelAPIError("busy", retryable=True, retry_after=0.3),
                lw.ModelAPIError("busy", retryable=True, retry_after=0.3),
                "ok",
            ],
        )

    with working_limit(0.4):
        out = await failing_then_ok().generate(HI)
    assert out.text == "ok"
    with pytest.raises(LimitExceededError) as info, time_limit(0.4):
        await failing_then_ok().generate(HI)
    assert info.value.type == "time"


async def test_waits_at_the_same_time_count_once_toward_a_working_limit() -> None:
    def busy_then_ok() -> lw.Model:
        return lw.get_model(
            "mock", outputs=[lw.ModelAPIError("busy", retryable=True, retry_after=0.3), "ok"]
        )

    start = time.monotonic()
    with working_limit(10) as limit:
        outs = await asyncio.gather(busy_then_ok().generate(HI), busy_then_ok().generate(HI))
        wall = time.monotonic() - start
        waiting = limit.waiting  # type: ignore[attr-defined]
        assert limit.remaining() <= 10  # type: ignore[attr-defined]
    assert [o.text for o in outs] == ["ok", "ok"]
    # two 0.3 s backoffs at once: 0.3 s of waiting, not 0.6 s (more than the wall time)
    assert 0.25 <= waiting <= wall


async def test_a_working_limit_fires_once_the_work_after_a_wait_runs_out() -> None:
    calls = 0

    async def respond(*_: object) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise lw.ModelAPIError("busy", retryable=True, retry_after=0.3)
        await asyncio.sleep(5)  # then works, too long
        return "late"

    model = lw.get_model("mock", outputs=respond)
    start = time.monotonic()
    with pytest.raises(LimitExceededError) as info, working_limit(0.2):
        await model.generate(HI)
    took = time.monotonic() - start
    assert info.value.type == "working"
    assert calls == 2
    # the 0.3 s backoff stopped the clock; the 0.2 s of work after it ended the call
    assert 0.45 <= took < 4


async def test_working_limit_is_checked_between_calls() -> None:
    model = scripted()
    with working_limit(0.1):
        await model.generate(HI)
        time.sleep(0.15)  # noqa: ASYNC251 - working (blocking) time, deliberately
        with pytest.raises(LimitExceededError) as info:
            check_limits()
    assert info.value.type == "working"


async def test_remaining_time_reports_the_tightest() -> None:
    assert remaining_time() is None
    with time_limit(100), working_limit(10):
        left = remaining_time()
        assert left is not None
        assert 9 < left <= 10


def test_a_limit_cannot_be_entered_twice() -> None:
    limit = step_limit(1)
    with limit, pytest.raises(lw.ConfigurationError), limit:
        pass


def test_negative_limits_are_rejected() -> None:
    with pytest.raises(lw.ConfigurationError):
        token_limit(-1)


async def test_a_working_limit_that_fired_stays_fired_when_a_wait_ends_after() -> None:
    """A sibling call whose backoff begins just before the limit fires, and ends when its
    cancellation arrives, must not re-arm the limit: a second firing would cancel the
    task again, and the limit would escape as a bare CancelledError."""
    limit = working_limit(0.3)

    class _Busy(lw.ModelAPI):
        provider = "busy-at-the-deadline"
        model_name = ""

        async def generate(self, *_: object) -> lw.ModelOutput:
            loop = asyncio.get_running_loop()
            reply: asyncio.Future[lw.ModelOutput] = loop.create_future()
            # fail just before the limit's deadline, in the same loop turn as its timer
            error = lw.ModelAPIError("busy", retryable=True, retry_after=1.0)
            loop.call_at(limit._timer.when() - 0.001, reply.set_exception, error)  # type: ignore[attr-defined]
            return await reply

    model = lw.Model(_Busy())

    @lw.tool(parallel=True)
    async def ask() -> str:
        """Ask the model."""
        return (await model.generate(HI)).text

    @lw.tool(parallel=True)
    async def work() -> str:
        """Work past the deadline, and take a while to clean up when cancelled."""
        await asyncio.sleep(0.25)
        time.sleep(0.1)  # noqa: ASYNC251 - busy across the deadline: both timers due at once
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)
            raise
        return "done"

    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="ask"), lw.ToolCall(function="work")]
    )
    with pytest.raises(LimitExceededError) as info, limit:
        await lw.execute_tools(message, [ask, work])
    assert info.value.type == "working"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


def test_limits_must_be_numbers() -> None:
    for bad in ("10", None, float("nan"), True):
        with pytest.raises(lw.ConfigurationError, match="must be a number"):
            step_limit(bad)  # type: ignore[arg-type]
    with pytest.raises(lw.ConfigurationError, match="must be a number"):
        time_limit(float("nan"))


def test_counted_limits_must_be_whole_numbers() -> None:
    for factory, unit in [
        (step_limit, "steps"),
        (message_limit, "messages"),
        (token_limit, "tokens"),
    ]:
        with pytest.raises(lw.ConfigurationError, match=f"must be a whole number of {unit}"):
            factory(2.5)  # type: ignore[arg-type]
        assert factory(3.0).limit == 3  # type: ignore[arg-type]


async def test_every_limit_says_plainly_what_was_reached() -> None:
    """Issue 15, item 10: "step limit of 5 reached (6)" read as an off-by-one."""
    model = scripted()
    with step_limit(5):
        for _ in range(5):
            await model.generate(HI)
        with pytest.raises(LimitExceededError) as steps:
            await model.generate(HI)
    assert str(steps.value) == "step limit reached: 5 steps"
    assert steps.value.info.value == 5 and steps.value.info.limit == 5

    three = [*HI, lw.AssistantMessage(content="x"), *HI]
    with message_limit(2), pytest.raises(LimitExceededError) as messages:
        await model.generate(three)
    assert str(messages.value) == (
        "message limit reached: the next call would send 3 messages (limit 2)"
    )

    with token_limit(1000) as tokens:
        tokens.used = 1234
        with pytest.raises(LimitExceededError) as used:
            await model.generate(HI)
    assert str(used.value) == "token limit reached: 1,234 tokens used (limit 1,000)"

    with pytest.raises(LimitExceededError) as timed, time_limit(0.05):
        await asyncio.sleep(5)
    assert str(timed.value).startswith("time limit reached: 0.")
    assert str(timed.value).endswith(" s elapsed (limit 0.05 s)")

    with pytest.raises(LimitExceededError) as worked, working_limit(0.05):
        await asyncio.sleep(5)
    assert str(worked.value).startswith("working time limit reached: ")
    assert str(worked.value).endswith(" s worked (limit 0.05 s)")


async def test_a_run_ended_by_a_limit_keeps_the_plain_message() -> None:
    agent = lw.react(max_steps=None)
    state = await lw.run(agent, "go", model=scripted(), limits=[step_limit(3)], db=False)
    assert state.limit is not None
    assert state.limit.message == "step limit reached: 3 steps"
    assert state.limit.value == 3

    state = await lw.run(lw.iterative(max_steps=2), "go", model=scripted(), db=False)
    assert state.limit is not None and state.limit.message == "step limit reached: 2 steps"


async def test_a_wait_for_a_shared_resource_is_not_working_time_but_is_time() -> None:
    """Issue 16, item 3 (the limits' side): a wait for a free sandbox is marked with
    waiting(); a working limit stands still during it, a time limit does not."""
    from loopwright.limits import waiting

    with working_limit(0.3) as limit:
        with waiting():
            await asyncio.sleep(0.5)  # longer than the budget: not charged
        assert limit.elapsed() < 0.2  # type: ignore[attr-defined]
    with pytest.raises(LimitExceededError) as info, time_limit(0.1), waiting():
        await asyncio.sleep(5)
    assert info.value.type == "time"
