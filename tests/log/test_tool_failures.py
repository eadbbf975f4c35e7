"""A tool call that raised is recorded with its error and traceback, and the reader gives
them by call id (what `runs show` needs instead of "Not run")."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw


def divide_inner(a: int, b: int) -> float:
    return a / b


@lw.tool
def divide(a: int, b: int) -> float:
    """Divide.

    Args:
        a: Numerator.
        b: Denominator.
    """
    return divide_inner(a, b)


@lw.tool
def shout(text: str) -> str:
    """Raise a long error.

    Args:
        text: What to say.
    """
    raise ValueError(text * 10_000)


async def test_a_tool_that_raised_is_recorded_with_its_error_and_traceback(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    call = lw.ModelOutput.for_tool_call("divide", {"a": 1, "b": 0})
    model = lw.get_model("mock", outputs=[call, "unreachable"])
    with pytest.raises(ZeroDivisionError):
        await lw.run(lw.react(tools=[divide]), "divide", model=model, db=db)
    [info] = lw.list_runs(db)
    assert info.status == "error"
    with lw.load_run(info.id, db=db) as log:
        tools = log.tool_events()
        messages = log.messages()
    call_id = call.message.tool_calls[0].id
    ev = tools[call_id]
    assert ev.failure == "ZeroDivisionError: division by zero"
    assert ev.traceback is not None
    assert ev.traceback.startswith("Traceback (most recent call last):")
    assert "divide_inner" in ev.traceback
    assert "ZeroDivisionError: division by zero" in ev.traceback
    assert ev.result is None and ev.pending is None
    # the conversation holds the call (answered, in a sample's final state, by the
    # agent's placeholder); the event says what happened: the CLI looks it up by its id
    calls = [c.id for m in messages if isinstance(m, lw.AssistantMessage) for c in m.tool_calls]
    assert calls == [call_id]


async def test_failures_and_tracebacks_are_bounded(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    call = lw.ModelOutput.for_tool_call("shout", {"text": "x" * 100})
    model = lw.get_model("mock", outputs=[call, "unreachable"])
    with pytest.raises(ValueError):
        await lw.run(lw.react(tools=[shout]), "shout", model=model, db=db)
    with lw.load_run(None, db=db) as log:
        [ev] = log.tool_events().values()
    assert ev.failure is not None and ev.traceback is not None
    assert 16_000 <= len(ev.failure) < 16_100
    assert ev.failure.startswith("ValueError: xxx") and "characters cut]" in ev.failure
    assert len(ev.traceback) < 16_100
    assert ev.traceback.startswith("Traceback") and "characters cut]" in ev.traceback
    assert "raised by tool 'shout'" in ev.traceback  # the end is kept


async def test_a_cancelled_tool_has_no_traceback(tmp_path: Path) -> None:
    import asyncio

    @lw.tool
    async def wait() -> str:
        """Wait for ever."""
        await asyncio.sleep(60)
        return "never"

    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("wait", {}), "x"])
    state = await lw.run(
        lw.react(tools=[wait]),
        "w",
        model=model,
        db=tmp_path / "r.db",
        limits=[lw.time_limit(0.5)],
    )
    assert state.completed == "limit"
    with lw.load_run(None, db=tmp_path / "r.db") as log:
        [ev] = log.tool_events().values()
    assert ev.failure is not None and "Cancelled" in ev.failure
    assert ev.traceback is None
