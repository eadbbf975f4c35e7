"""A reply's tool-call arguments share the output size bound, in every protocol."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.model._bounds import argument_chars


@lw.tool
def echo(text: str) -> str:
    """Echo.

    Args:
        text: Anything.
    """
    return f"{len(text)} characters"


def _reply(*sizes: int) -> lw.ModelOutput:
    calls = [
        lw.ToolCall(id=f"c{i}", function="echo", arguments={"text": "x" * n})
        for i, n in enumerate(sizes)
    ]
    return lw.ModelOutput(
        message=lw.AssistantMessage(content="", tool_calls=calls), stop_reason="tool_calls"
    )


async def test_calls_past_the_reply_budget_are_not_run_and_the_model_is_told() -> None:
    model = lw.get_model("mock", outputs=[_reply(400, 400, 400, 50)])
    out = await model.generate(
        [lw.UserMessage(content="go")], [echo], config=lw.GenerateConfig(max_output_chars=1000)
    )
    calls = out.message.tool_calls
    assert [c.parse_error is None for c in calls] == [True, True, False, True]
    assert calls[2].arguments == {}
    assert "max_output_chars" in (calls[2].parse_error or "")
    results = await lw.execute_tools(out.message, [echo])
    assert [r.error is None for r in results] == [True, True, False, True]
    assert "max_output_chars" in results[2].text


async def test_native_megabyte_arguments_are_bounded_by_default(tmp_path: Path) -> None:
    mb = 1_000_000
    model = lw.get_model("mock", outputs=[_reply(3 * mb, 3 * mb, 3 * mb), "done"])
    began = time.perf_counter()
    state = await lw.run(
        lw.react(tools=[echo], submit=False), "go", model=model, db=tmp_path / "runs.db"
    )
    assert time.perf_counter() - began < 30
    first = state.messages[1]
    assert isinstance(first, lw.AssistantMessage)
    assert all(c.parse_error and c.arguments == {} for c in first.tool_calls)
    assert (tmp_path / "runs.db").stat().st_size < 2 * mb


def test_argument_chars_is_flat_and_stops_early() -> None:
    deep: object = "x"
    for _ in range(100_000):
        deep = [deep]
    assert argument_chars(deep, 10**9) > 100_000
    assert argument_chars({"a": "y" * 10_000_000}, 100) > 100
    small = argument_chars({"a": 1, "b": [True, None]}, 1000)
    assert 10 <= small <= len('{"a": 1, "b": [true, null]}')  # about its JSON size


@pytest.mark.parametrize(
    "hostile",
    ["c1\n", "c 1", "\u0441\u0031", "c\u200b1", "c1\x1b[2K", "x" * 129, "\U0001f600"],
)
def test_a_call_id_that_is_not_plain_is_replaced(hostile: str) -> None:
    """A person approving a deferred call reads its id and types it back: an id with a
    line break, a space, a lookalike or invisible letter, an escape, or of a flood's
    length is replaced by a fresh one (a plain one, a provider's, is kept)."""
    from loopwright.model._bounds import bound_calls

    calls = [
        lw.ToolCall(id=hostile, function="echo", arguments={"text": "a"}),
        lw.ToolCall(id="call_AbC-12.3:x", function="echo", arguments={"text": "b"}),
    ]
    reply = lw.ModelOutput(
        message=lw.AssistantMessage(content="", tool_calls=calls), stop_reason="tool_calls"
    )
    out = bound_calls(reply, lw.GenerateConfig())
    new, kept = out.message.tool_calls
    assert new.id != hostile and new.id.isascii() and new.id.isalnum()
    assert kept.id == "call_AbC-12.3:x"
    assert [c.arguments for c in out.message.tool_calls] == [{"text": "a"}, {"text": "b"}]
