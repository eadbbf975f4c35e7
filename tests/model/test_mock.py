import asyncio
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

import loopwright as lw

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]


async def test_script_replays_in_order_then_errors_clearly() -> None:
    model = lw.get_model(
        "mock", outputs=["one", lw.ModelOutput.for_tool_call("f", {"x": 1})], config=None
    )
    assert (await model.generate(HI)).text == "one"
    second = await model.generate(HI)
    assert second.tool_calls[0].function == "f"
    assert second.stop_reason == "tool_calls"
    with pytest.raises(lw.ScriptExhaustedError, match="ran out after 2 outputs"):
        await model.generate(HI)


async def test_script_exhaustion_is_not_retried() -> None:
    model = lw.get_model("mock", outputs=["one"])
    await model.generate(HI)
    with pytest.raises(lw.ScriptExhaustedError) as info:
        await model.generate(HI)
    assert not getattr(info.value, "__notes__", None)  # failed on the first attempt


async def test_repeat_restarts_the_script() -> None:
    model = lw.get_model("mock", outputs=["a", "b"], repeat=True)
    texts = [(await model.generate(HI)).text for _ in range(5)]
    assert texts == ["a", "b", "a", "b", "a"]


async def test_default_mock_answers_forever() -> None:
    model = lw.get_model("mock")
    for _ in range(3):
        assert "mock" in (await model.generate(HI)).text


def test_empty_script_is_rejected() -> None:
    with pytest.raises(lw.ConfigurationError, match="empty"):
        lw.get_model("mock", outputs=[])


@pytest.mark.parametrize("bad", [[1], ["ok", {"text": "x"}], "just a string", 42])
def test_malformed_scripts_are_rejected(bad: object) -> None:
    with pytest.raises(lw.ConfigurationError, match="mock model"):
        lw.get_model("mock", outputs=bad)


async def test_replayed_outputs_are_copies() -> None:
    scripted = lw.ModelOutput.from_text("same")
    model = lw.get_model("mock", outputs=[scripted], repeat=True)
    a = await model.generate(HI)
    b = await model.generate(HI)
    assert a.message.id == scripted.message.id  # first use keeps the scripted ids
    assert b.message.id != a.message.id  # a replay gets fresh ones: ids stay unique
    assert a.message is not scripted.message and b.message is not a.message
    with pytest.raises(ValidationError, match="frozen"):  # messages are values
        a.message.content = "changed"


async def test_replayed_tool_calls_get_fresh_ids() -> None:
    step = lw.ModelOutput.for_tool_call("f", tool_call_id="c1")
    model = lw.get_model("mock", outputs=[step, step])
    first, second = await model.generate(HI), await model.generate(HI)
    assert first.tool_calls[0].id == "c1"
    assert second.tool_calls[0].id != "c1"


async def test_sync_and_async_responders() -> None:
    seen: list[int] = []

    def sync_responder(
        messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: lw.GenerateConfig
    ) -> str:
        seen.append(len(messages))
        return f"{len(messages)} messages, {len(tools)} tools"

    async def async_responder(
        messages: Sequence[lw.ChatMessage], tools: Sequence[lw.ToolInfo], config: lw.GenerateConfig
    ) -> lw.ModelOutput:
        await asyncio.sleep(0)
        return lw.ModelOutput.from_text(messages[-1].text.upper())

    tool = lw.ToolInfo(name="t")
    assert (await lw.get_model("mock", outputs=sync_responder).generate(HI, [tool])).text == (
        "1 messages, 1 tools"
    )
    assert seen == [1]
    assert (await lw.get_model("mock", outputs=async_responder).generate(HI)).text == "HI"


async def test_responder_returning_garbage_is_a_clear_error() -> None:
    model = lw.get_model("mock", outputs=lambda m, t, c: 123)
    with pytest.raises(lw.ConfigurationError, match="responder"):
        await model.generate(HI)


async def test_usage_is_synthesised_and_incremental_counting_matches_a_recount() -> None:
    model = lw.get_model("mock", outputs=["reply number one", "two"], repeat=True)
    messages: list[lw.ChatMessage] = [lw.SystemMessage(content="sys"), *HI]
    for i in range(6):
        out = await model.generate(messages)
        assert out.usage is not None
        fresh = lw.get_model("mock", outputs=["reply number one", "two"], repeat=True)
        for _ in range(i % 2):
            await fresh.generate(HI)
        recount = (await fresh.generate(messages)).usage
        assert recount is not None
        assert out.usage.input_tokens == recount.input_tokens
        assert out.usage.total_tokens == out.usage.input_tokens + out.usage.output_tokens
        messages += [out.message, lw.UserMessage(content=f"more {i}")]
    # a pruned history (different prefix) is recounted, not mis-cached
    pruned = [messages[0], messages[-1]]
    small = await model.generate(pruned)
    assert small.usage is not None and small.usage.input_tokens < 20
    assert model.usage.input_tokens > 0


async def test_scripted_exceptions_are_raised() -> None:
    model = lw.get_model("mock", outputs=[lw.ModelAPIError("bad request", status_code=400)])
    with pytest.raises(lw.ModelAPIError, match="bad request"):
        await model.generate(HI)
