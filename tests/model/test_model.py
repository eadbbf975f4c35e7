import asyncio
import time
from collections.abc import Sequence

import pytest

import loopwright as lw

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]
FAST = lw.GenerateConfig(retry_wait=0.001, max_retry_wait=0.01)


async def test_retryable_error_is_retried_then_succeeds() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelAPIError("overloaded", retryable=True, status_code=529),
            ConnectionResetError("dropped"),
            "finally",
        ],
        config=FAST,
    )
    calls: list[lw.ModelCall] = []

    class Record:
        def before_generate(self, call: lw.ModelCall) -> None:
            pass

        def after_generate(self, call: lw.ModelCall) -> None:
            calls.append(call)

    with lw.model_hook(Record()):
        out = await model.generate(HI)
    assert out.text == "finally"
    assert calls[0].retries == 2
    assert calls[0].wait_time > 0


async def test_non_retryable_error_is_raised_at_once() -> None:
    model = lw.get_model(
        "mock", outputs=[lw.ModelAPIError("bad request", status_code=400), "never"], config=FAST
    )
    with pytest.raises(lw.ModelAPIError, match="bad request"):
        await model.generate(HI)
    # the second output is still there: no retry happened
    assert (await model.generate(HI)).text == "never"


async def test_retries_give_up_after_max_retries_with_a_note() -> None:
    err = lw.ModelAPIError("rate limited", retryable=True, status_code=429)
    model = lw.get_model(
        "mock", outputs=[err], repeat=True, config=FAST.merge(lw.GenerateConfig(max_retries=2))
    )
    with pytest.raises(lw.ModelAPIError) as info:
        await model.generate(HI)
    assert "gave up after 3 attempts" in " ".join(info.value.__notes__)


async def test_retry_after_is_honoured() -> None:
    model = lw.get_model(
        "mock",
        outputs=[lw.ModelAPIError("slow down", retryable=True, retry_after=0.2), "ok"],
        config=lw.GenerateConfig(retry_wait=10.0),  # backoff would wait far longer
    )
    start = time.perf_counter()
    assert (await model.generate(HI)).text == "ok"
    elapsed = time.perf_counter() - start
    assert 0.2 <= elapsed < 5


async def test_timeout_raises_model_timeout_error_after_retries() -> None:
    attempts = 0

    async def slow(*_: object) -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(10)
        return "late"

    model = lw.get_model(
        "mock",
        outputs=slow,
        config=FAST.merge(lw.GenerateConfig(timeout=0.05, max_retries=1)),
    )
    with pytest.raises(lw.ModelTimeoutError, match=r"within 0\.05s"):
        await model.generate(HI)
    assert attempts == 2
    assert isinstance(lw.ModelTimeoutError("x"), TimeoutError)


async def test_timeout_then_success() -> None:
    attempts = 0

    async def sometimes_slow(*_: object) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(10)
        return "fast now"

    model = lw.get_model(
        "mock", outputs=sometimes_slow, config=FAST.merge(lw.GenerateConfig(timeout=0.05))
    )
    assert (await model.generate(HI)).text == "fast now"


async def test_max_connections_bounds_concurrency() -> None:
    running = peak = 0

    async def tracked(*_: object) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return "done"

    lw.register_provider("conc-test", lambda name, **kw: _Named("conc-test", tracked))
    model = lw.get_model("conc-test", config=lw.GenerateConfig(max_connections=3))
    results = await asyncio.gather(*(model.generate(HI) for _ in range(12)))
    assert all(r.text == "done" for r in results)
    assert peak == 3


class _Named(lw.ModelAPI):
    def __init__(self, provider: str, responder: object) -> None:
        from loopwright.model.providers.mock import MockModelAPI

        self.provider = provider
        self._inner = MockModelAPI(outputs=responder)  # type: ignore[arg-type]

    async def generate(
        self,
        messages: Sequence[lw.ChatMessage],
        tools: Sequence[lw.ToolInfo],
        config: lw.GenerateConfig,
    ) -> lw.ModelOutput:
        return await self._inner.generate(messages, tools, config)


async def test_config_precedence_call_over_model_over_default() -> None:
    seen: list[lw.GenerateConfig] = []

    def capture(
        m: Sequence[lw.ChatMessage], t: Sequence[lw.ToolInfo], config: lw.GenerateConfig
    ) -> str:
        seen.append(config)
        return "ok"

    model = lw.get_model(
        "mock", outputs=capture, config=lw.GenerateConfig(temperature=0.3, max_tokens=50)
    )
    await model.generate(HI, config=lw.GenerateConfig(max_tokens=5))
    assert seen[0].temperature == 0.3
    assert seen[0].max_tokens == 5
    assert seen[0].max_retries == 5  # the default underneath


async def test_hooks_see_success_and_failure_and_can_veto() -> None:
    events: list[tuple[str, str | None]] = []

    class Hook:
        def before_generate(self, call: lw.ModelCall) -> None:
            events.append(("before", None))
            if call.messages[-1].text == "forbidden":
                raise lw.LoopwrightError("vetoed")

        def after_generate(self, call: lw.ModelCall) -> None:
            events.append(("after", call.output.text if call.output else type(call.error).__name__))

    model = lw.get_model("mock", outputs=["ok", lw.ModelAPIError("boom")])
    with lw.model_hook(Hook()):
        await model.generate(HI)
        with pytest.raises(lw.ModelAPIError):
            await model.generate(HI)
        with pytest.raises(lw.LoopwrightError, match="vetoed"):
            await model.generate([lw.UserMessage(content="forbidden")])
    assert events == [
        ("before", None),
        ("after", "ok"),
        ("before", None),
        ("after", "ModelAPIError"),
        ("before", None),
        ("after", "LoopwrightError"),
    ]


async def test_usage_is_accounted_and_outputs_are_labelled() -> None:
    model = lw.get_model("mock/labelled", outputs=["a", "b"])
    first = await model.generate(HI)
    second = await model.generate(HI)
    assert first.usage and second.usage
    assert model.usage == first.usage + second.usage
    assert first.model == "mock/labelled"
    assert first.message.model == "mock/labelled"
    assert first.time is not None and first.time >= 0


async def test_tools_may_be_tool_infos_or_objects_with_info() -> None:
    seen: list[list[str]] = []

    class HasInfo:
        info = lw.ToolInfo(name="from_object")

    def capture(m: object, tools: Sequence[lw.ToolInfo], c: object) -> str:
        seen.append([t.name for t in tools])
        return "ok"

    model = lw.get_model("mock", outputs=capture)
    await model.generate(HI, [lw.ToolInfo(name="plain"), HasInfo()])
    assert seen == [["plain", "from_object"]]


def test_the_connection_limit_follows_the_event_loop_and_the_calls_limit() -> None:
    """A model keeps the last connection slot it used; another event loop (a semaphore
    belongs to one) or another ``max_connections`` must get its own."""
    running = peak = 0

    async def tracked(*_: object) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return "done"

    lw.register_provider("loops-test", lambda name, **kw: _Named("loops-test", tracked))
    model = lw.get_model("loops-test", config=lw.GenerateConfig(max_connections=1))

    async def burst(config: lw.GenerateConfig | None = None) -> int:
        nonlocal peak
        peak = 0
        await asyncio.gather(*(model.generate(HI, config=config) for _ in range(4)))
        return peak

    assert asyncio.run(burst()) == 1
    assert asyncio.run(burst()) == 1  # a new loop: waiting must not use the old one's slot
    assert asyncio.run(burst(lw.GenerateConfig(max_connections=3))) == 3


class _Slow(lw.ModelAPI):
    """Answers after a short sleep; its own connection key, so its slots are its own."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.model_name = ""

    async def generate(
        self, messages: Sequence[lw.ChatMessage], tools: object, config: object
    ) -> lw.ModelOutput:
        await asyncio.sleep(0.05)
        return lw.ModelOutput.from_text("ok")


class _WaitHook:
    def __init__(self, fail_begin: bool = False, fail_end: bool = False) -> None:
        self.fail_begin, self.fail_end = fail_begin, fail_end
        self.began = self.ended = 0

    def before_generate(self, call: lw.ModelCall) -> None:
        pass

    def after_generate(self, call: lw.ModelCall) -> None:
        pass

    def wait_began(self, call: lw.ModelCall) -> None:
        if self.fail_begin:
            raise RuntimeError("a hook bug at the start of a wait")
        self.began += 1

    def wait_ended(self, call: lw.ModelCall, seconds: float) -> None:
        self.ended += 1
        if self.fail_end:
            raise RuntimeError("a hook bug at the end of a wait")


async def test_a_hook_failing_as_a_queue_wait_ends_costs_no_connection_slot() -> None:
    model = lw.Model(_Slow("slot-leak-test"), lw.GenerateConfig(max_connections=1, max_retries=0))
    first = asyncio.create_task(model.generate(HI))  # takes the only slot
    await asyncio.sleep(0)
    hook = _WaitHook(fail_end=True)
    with lw.model_hook(hook):
        second = asyncio.create_task(model.generate(HI))  # queues; the hook fails at its end
        results = await asyncio.gather(first, second, return_exceptions=True)
    assert isinstance(results[0], lw.ModelOutput)
    assert isinstance(results[1], RuntimeError) and hook.began == hook.ended == 1
    # the slot came back: the next call does not wait for a slot nobody holds
    out = await asyncio.wait_for(model.generate(HI), 2)
    assert out.text == "ok"


async def test_hooks_are_told_a_wait_ended_only_if_told_it_began() -> None:
    model = lw.Model(_Slow("pairing-test"), lw.GenerateConfig(max_connections=1, max_retries=0))
    first = asyncio.create_task(model.generate(HI))
    await asyncio.sleep(0)
    failing, counting = _WaitHook(fail_begin=True), _WaitHook()
    # the call queues: the first hook fails before the second was told the wait began
    with (
        lw.model_hook(failing),
        lw.model_hook(counting),
        pytest.raises(RuntimeError, match="start of a wait"),
    ):
        await model.generate(HI)
    await first
    assert counting.began == 0 and counting.ended == 0  # no end without its begin
    assert failing.ended == 0


async def test_model_usage_adds_up_per_model_and_copies_do_not_share_it() -> None:
    import copy

    model = lw.get_model("mock", outputs=["one", "two"])
    await model.generate(HI)
    twin = copy.copy(model)
    await model.generate(HI)
    assert model.usage.total_tokens > twin.usage.total_tokens > 0
    # only what providers reported is set (the optional counts stay unset, None)
    assert model.usage.reasoning_tokens is None
    assert model.usage.cache_read_tokens is None and model.usage.cache_write_tokens is None


async def test_a_call_config_changed_in_place_between_calls_is_merged_again() -> None:
    seen: list[int | None] = []

    def respond(messages: object, tools: object, config: lw.GenerateConfig) -> str:
        seen.append(config.max_tokens)
        return "ok"

    model = lw.get_model("mock", outputs=respond, config=lw.GenerateConfig(temperature=0.1))
    config = lw.GenerateConfig(max_tokens=10)
    await model.generate(HI, config=config)
    await model.generate(HI, config=config)
    config.max_tokens = 20  # the same object, changed
    await model.generate(HI, config=config)
    assert seen == [10, 10, 20]


async def test_every_attempt_has_a_deadline_by_default() -> None:
    from loopwright.model._config import DEFAULT_TIMEOUT

    seen: list[float | None] = []

    def record(_: object, __: object, config: lw.GenerateConfig) -> str:
        seen.append(config.timeout)
        return "ok"

    await lw.get_model("mock", outputs=record).generate(HI)
    assert seen == [DEFAULT_TIMEOUT] and 120 <= DEFAULT_TIMEOUT <= 300
    # a call may change it, or lift it with infinity
    slept = lw.get_model("mock", outputs=lambda *_: asyncio.sleep(0.01, "late"))
    out = await slept.generate(HI, config=lw.GenerateConfig(timeout=float("inf")))
    assert out.text == "late"


async def test_a_provider_may_cap_the_retries_of_a_kind_of_failure() -> None:
    from loopwright.model._api import RetryDecision

    class Capped(_Named):
        def classify_error(self, error: BaseException) -> RetryDecision:
            return RetryDecision(True, max_retries=1)

    attempts = 0

    def refuse(*_: object) -> str:
        nonlocal attempts
        attempts += 1
        raise ConnectionRefusedError("nobody home")

    model = lw.Model(Capped("capped", refuse), FAST)  # max_retries 5 by default
    with pytest.raises(ConnectionRefusedError) as info:
        await model.generate(HI)
    assert attempts == 2
    assert "gave up after 2 attempts" in " ".join(info.value.__notes__)
