"""Tool hooks: order, the context they run in, and every path they see."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

import loopwright as lw

current: contextvars.ContextVar[str | None] = contextvars.ContextVar("current", default=None)


class Recorder:
    """Records events, and sets a contextvar the tool can read (like a transcript)."""

    def __init__(self, name: str = "rec", log: list[str] | None = None) -> None:
        self.name = name
        self.log = log if log is not None else []
        self.before: list[lw.ToolExecution] = []
        self.after: list[lw.ToolExecution] = []
        self.tasks: list[tuple[str, asyncio.Task[Any] | None]] = []

    def before_tool(self, ex: lw.ToolExecution) -> None:
        assert ex.message is None and ex.error is None
        self.log.append(f"{self.name} before {ex.call.function}")
        self.before.append(ex)
        self.tasks.append((ex.call.function, asyncio.current_task()))
        current.set(f"inside {ex.call.id}")
        ex.data[self.name] = "seen"

    def after_tool(self, ex: lw.ToolExecution) -> None:
        self.log.append(f"{self.name} after {ex.call.function}")
        self.after.append(ex)
        self.tasks.append((ex.call.function, asyncio.current_task()))


def msg(*names: str, **args: Any) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=n, arguments=args) for n in names])


async def test_hooks_wrap_each_call_in_order_with_one_execution_object() -> None:
    log: list[str] = []

    @lw.tool
    def a() -> str:
        """A."""
        log.append("run a")
        return "A"

    @lw.tool
    async def b() -> str:
        """B."""
        log.append("run b")
        return "B"

    first, second = Recorder("one", log), Recorder("two", log)
    before = time.time()
    with lw.tool_hook(first), lw.tool_hook(second):
        results = await lw.execute_tools(msg("a", "b"), [a, b])
    assert log == [
        "one before a", "two before a", "run a", "one after a", "two after a",
        "one before b", "two before b", "run b", "one after b", "two after b",
    ]  # fmt: skip
    ex = first.after[0]
    assert ex is first.before[0] is second.after[0]
    assert ex.call.function == "a"
    assert ex.tool is a
    assert ex.message is results[0]
    assert ex.error is None and ex.approval is None and not ex.truncated
    assert before - 1 <= ex.started <= time.time()
    assert ex.duration >= 0
    assert ex.data == {"one": "seen", "two": "seen"}


async def test_hooks_are_removed_when_the_context_ends() -> None:
    rec = Recorder()
    with lw.tool_hook(rec):
        pass
    await lw.execute_tools(msg("think", thought="x"), [lw.think()])
    assert rec.after == []


async def test_hooks_run_in_the_calls_task_and_share_its_context_with_the_tool() -> None:
    seen: dict[str, tuple[str | None, Any]] = {}

    @lw.tool(parallel=True)
    async def async_tool() -> None:
        """Async."""
        seen["async_tool"] = (current.get(), asyncio.current_task())

    @lw.tool(parallel=True)
    def sync_tool() -> None:
        """Sync (in a thread)."""
        seen["sync_tool"] = (current.get(), threading.get_ident())

    rec = Recorder()
    m = msg("async_tool", "sync_tool")
    with lw.tool_hook(rec):
        await lw.execute_tools(m, [async_tool, sync_tool])
    assert current.get() is None  # nothing leaked into the caller's context
    # each tool saw the value its own call's before_tool set
    assert seen["async_tool"][0] == f"inside {m.tool_calls[0].id}"
    assert seen["sync_tool"][0] == f"inside {m.tool_calls[1].id}"
    assert seen["sync_tool"][1] != threading.get_ident()
    # before_tool and after_tool of a call ran in one task: the one the async tool ran in
    by_call: dict[str, set[int]] = {}
    for function, task in rec.tasks:
        by_call.setdefault(function, set()).add(id(task))
    assert len(rec.tasks) == 4
    assert by_call["async_tool"] == {id(seen["async_tool"][1])}
    assert len(by_call["sync_tool"]) == 1
    assert id(asyncio.current_task()) not in by_call["async_tool"] | by_call["sync_tool"]


async def test_after_tool_sees_expected_errors_and_truncation() -> None:
    @lw.tool
    def fail() -> str:
        """Fail."""
        raise lw.ToolError("nope")

    @lw.tool
    def big() -> str:
        """Big."""
        return "y" * 5000

    rec = Recorder()
    with lw.tool_hook(rec):
        await lw.execute_tools(msg("fail", "big", "missing"), [fail, big], max_output=1000)
    failed, truncated, unknown = rec.after
    assert failed.message is not None and failed.message.error is not None
    assert failed.message.error.type == "tool_error" and failed.error is None
    assert truncated.truncated and truncated.message is not None
    assert unknown.tool is None and unknown.message is not None
    assert unknown.message.error is not None and unknown.message.error.type == "unknown_tool"


async def test_after_tool_sees_bugs_and_cancellations() -> None:
    @lw.tool(parallel=True)
    async def broken() -> None:
        """Broken."""
        await asyncio.sleep(0.05)
        raise RuntimeError("bug")

    @lw.tool(parallel=True)
    async def slow() -> None:
        """Slow."""
        await asyncio.sleep(10)

    rec = Recorder()
    with lw.tool_hook(rec), pytest.raises(RuntimeError, match="bug"):
        await lw.execute_tools(msg("broken", "slow"), [broken, slow])
    errors = {ex.call.function: ex.error for ex in rec.after}
    assert isinstance(errors["broken"], RuntimeError)
    assert isinstance(errors["slow"], asyncio.CancelledError)
    assert all(ex.message is None for ex in rec.after)


async def test_a_failing_before_tool_stops_the_call() -> None:
    ran = False

    @lw.tool
    def f() -> None:
        """F."""
        nonlocal ran
        ran = True

    class Veto:
        def before_tool(self, ex: lw.ToolExecution) -> None:
            raise lw.LoopwrightError("limit reached")

        def after_tool(self, ex: lw.ToolExecution) -> None:
            raise AssertionError("after_tool of a hook whose before_tool failed")

    rec = Recorder()
    with lw.tool_hook(rec), lw.tool_hook(Veto()), pytest.raises(lw.LoopwrightError):
        await lw.execute_tools(msg("f"), [f])
    assert not ran
    [ex] = rec.after  # the hook that entered still saw the end
    assert isinstance(ex.error, lw.LoopwrightError)


async def test_a_failing_after_tool_propagates_but_the_other_hooks_still_run() -> None:
    class Broken:
        def before_tool(self, ex: lw.ToolExecution) -> None:
            pass

        def after_tool(self, ex: lw.ToolExecution) -> None:
            raise ValueError("hook bug")

    rec = Recorder()
    with lw.tool_hook(Broken()), lw.tool_hook(rec), pytest.raises(ValueError, match="hook bug"):
        await lw.execute_tools(msg("think", thought="x"), [lw.think()])
    assert len(rec.after) == 1
