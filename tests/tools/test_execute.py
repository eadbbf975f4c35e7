"""``execute_tools``: order, concurrency, threads, timeouts, truncation and every error path."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

import loopwright as lw


def calls(*specs: tuple[str, dict[str, Any]] | str) -> lw.AssistantMessage:
    tool_calls = []
    for spec in specs:
        name, args = (spec, {}) if isinstance(spec, str) else spec
        tool_calls.append(lw.ToolCall(function=name, arguments=args))
    return lw.AssistantMessage(tool_calls=tool_calls)


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# --- results and their order ----------------------------------------------------------


async def test_no_tool_calls_gives_no_results() -> None:
    assert await lw.execute_tools(lw.AssistantMessage(content="hi"), [add]) == []


async def test_results_match_calls_in_order_even_when_later_calls_finish_first() -> None:
    @lw.tool(parallel=True)
    async def wait(seconds: float) -> str:
        """Wait."""
        await asyncio.sleep(seconds)
        return f"waited {seconds}"

    msg = calls(("wait", {"seconds": 0.3}), ("wait", {"seconds": 0.0}), ("add", {"a": 1, "b": 2}))
    results = await lw.execute_tools(msg, [wait, add])
    assert [r.content for r in results] == ["waited 0.3", "waited 0.0", "3"]
    assert [r.tool_call_id for r in results] == [c.id for c in msg.tool_calls]
    assert [r.function for r in results] == ["wait", "wait", "add"]
    assert all(r.error is None for r in results)


class Reply(BaseModel):
    ok: bool
    items: list[int]


@dataclasses.dataclass
class Span:
    start: datetime.date
    days: int


class Opaque:
    def __str__(self) -> str:
        return "<opaque thing>"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        (None, ""),
        ([1, "a", None], '[1,"a",null]'),
        ({"k": [1, 2], "é": "ü"}, '{"k":[1,2],"é":"ü"}'),
        (Reply(ok=True, items=[1]), '{"ok":true,"items":[1]}'),
        (b"bytes \xff", "bytes \ufffd"),
        ((1, 2), "[1,2]"),
        ({3, 1, 2}, "[1,2,3]"),
        (Span(start=datetime.date(2024, 1, 2), days=3), '{"start":"2024-01-02","days":3}'),
        (datetime.date(2024, 1, 2), "2024-01-02"),
        (float("nan"), "NaN"),
        (Opaque(), "<opaque thing>"),
    ],
)
async def test_return_values_become_text(value: Any, text: str) -> None:
    @lw.tool
    def produce() -> Any:
        """Produce."""
        return value

    [result] = await lw.execute_tools(calls("produce"), [produce])
    assert result.content == text
    assert result.error is None


# --- concurrency ----------------------------------------------------------------------


async def test_parallel_async_tools_run_concurrently() -> None:
    @lw.tool(parallel=True)
    async def slow(n: int) -> int:
        """Slow."""
        await asyncio.sleep(0.5)
        return n

    start = time.perf_counter()
    results = await lw.execute_tools(calls(("slow", {"n": 1}), ("slow", {"n": 2})), [slow])
    elapsed = time.perf_counter() - start
    assert [r.content for r in results] == ["1", "2"]
    assert elapsed < 0.9  # two 0.5 s calls took the time of one


async def test_parallel_sync_tools_run_in_threads_concurrently() -> None:
    threads: list[int] = []

    @lw.tool(parallel=True)
    def blocking(n: int) -> int:
        """Block."""
        threads.append(threading.get_ident())
        time.sleep(0.5)
        return n

    start = time.perf_counter()
    results = await lw.execute_tools(
        calls(("blocking", {"n": 1}), ("blocking", {"n": 2})), [blocking]
    )
    assert time.perf_counter() - start < 0.9
    assert [r.content for r in results] == ["1", "2"]
    assert threading.get_ident() not in threads
    assert len(set(threads)) == 2


async def test_many_parallel_sync_tools_are_not_limited_by_the_default_executor() -> None:
    # asyncio's default executor has cpu + 4 threads: 6 on a 2-core machine
    @lw.tool(parallel=True)
    def blocking(n: int) -> int:
        """Block."""
        time.sleep(0.4)
        return n

    start = time.perf_counter()
    msg = calls(*(("blocking", {"n": i}) for i in range(16)))
    results = await lw.execute_tools(msg, [blocking], max_parallel=16)
    assert time.perf_counter() - start < 1.5
    assert [r.content for r in results] == [str(i) for i in range(16)]


def test_a_stuck_sync_tool_that_timed_out_does_not_hang_the_program() -> None:
    code = """
import asyncio, time
import loopwright as lw

@lw.tool(timeout=0.2)
def stuck() -> str:
    \"\"\"Stuck.\"\"\"
    time.sleep(60)
    return "never"

msg = lw.AssistantMessage(tool_calls=[lw.ToolCall(function="stuck")])
[result] = asyncio.run(lw.execute_tools(msg, [stuck]))
assert result.error.type == "timeout", result
print("done")
"""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "done"
    assert time.perf_counter() - start < 20  # not the 60 s the thread sleeps


async def test_worker_threads_are_reused() -> None:
    @lw.tool
    def work() -> None:
        """Work."""

    await lw.execute_tools(calls("work"), [work])
    before = threading.active_count()
    for _ in range(30):
        await lw.execute_tools(calls("work"), [work])
    assert threading.active_count() <= before + 1  # sequential calls reuse idle threads


async def test_sync_tools_do_not_block_the_event_loop() -> None:
    @lw.tool
    def blocking() -> str:
        """Block."""
        time.sleep(0.5)
        return "done"

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    task = asyncio.create_task(ticker())
    await lw.execute_tools(calls("blocking"), [blocking])
    task.cancel()
    assert ticks >= 5  # the loop kept running while the tool slept


async def test_non_parallel_tools_run_one_at_a_time_in_order() -> None:
    log: list[str] = []

    @lw.tool
    async def step(name: str) -> str:
        """Step."""
        log.append(f"start {name}")
        await asyncio.sleep(0.05)
        log.append(f"end {name}")
        return name

    await lw.execute_tools(calls(*(("step", {"name": n}) for n in "abc")), [step])
    assert log == ["start a", "end a", "start b", "end b", "start c", "end c"]


async def test_a_non_parallel_call_is_a_barrier_between_parallel_ones() -> None:
    log: list[str] = []

    @lw.tool(parallel=True)
    async def par(name: str) -> str:
        """Parallel."""
        log.append(f"start {name}")
        await asyncio.sleep(0.1)
        log.append(f"end {name}")
        return name

    @lw.tool
    async def seq(name: str) -> str:
        """Sequential."""
        log.append(f"start {name}")
        await asyncio.sleep(0.01)
        log.append(f"end {name}")
        return name

    msg = calls(
        ("par", {"name": "p1"}),
        ("par", {"name": "p2"}),
        ("seq", {"name": "s"}),
        ("par", {"name": "p3"}),
    )
    results = await lw.execute_tools(msg, [par, seq])
    assert [r.content for r in results] == ["p1", "p2", "s", "p3"]
    assert log[:2] == ["start p1", "start p2"]  # p1 and p2 overlap
    assert set(log[2:4]) == {"end p1", "end p2"}
    assert log[4:] == ["start s", "end s", "start p3", "end p3"]


async def test_max_parallel_caps_concurrency() -> None:
    running = 0
    peak = 0

    @lw.tool(parallel=True)
    async def work() -> None:
        """Work."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1

    results = await lw.execute_tools(calls(*["work"] * 6), [work], max_parallel=2)
    assert len(results) == 6
    assert peak == 2


async def test_every_call_runs_in_its_own_context_and_parallel_calls_in_own_tasks() -> None:
    import contextvars

    var: contextvars.ContextVar[int] = contextvars.ContextVar("var", default=0)
    tasks: list[asyncio.Task[Any] | None] = []
    seen: list[int] = []

    @lw.tool
    async def where() -> None:
        """Where (alone in its batch)."""
        tasks.append(asyncio.current_task())
        seen.append(var.get())
        var.set(var.get() + 1)

    @lw.tool(parallel=True)
    async def together() -> None:
        """Where (runs with the others)."""
        tasks.append(asyncio.current_task())
        seen.append(var.get())
        var.set(var.get() + 1)

    outer = asyncio.current_task()
    await lw.execute_tools(calls("where", "where"), [where])
    # calls alone run in the caller's task, each in a fresh copy of its context
    assert tasks == [outer, outer]
    assert seen == [0, 0]
    assert var.get() == 0
    tasks.clear()
    await lw.execute_tools(calls("together", "together"), [together])
    assert len({id(t) for t in tasks}) == 2
    assert outer not in tasks
    assert var.get() == 0


# --- output limit -----------------------------------------------------------------------


async def test_long_output_is_truncated_in_the_middle() -> None:
    @lw.tool
    def dump() -> str:
        """Dump."""
        return "".join(f"line {i}\n" for i in range(10_000))

    [result] = await lw.execute_tools(calls("dump"), [dump], max_output=1000)
    assert len(result.content.encode()) <= 1000
    assert result.content.startswith("line 0\nline 1\n")
    assert result.content.endswith("line 9999\n")
    assert "bytes (" in result.content and "truncated from the middle" in result.content
    assert result.error is None


async def test_default_output_limit_is_16_kib_and_zero_means_none() -> None:
    @lw.tool
    def dump() -> str:
        """Dump."""
        return "x" * 100_000

    [result] = await lw.execute_tools(calls("dump"), [dump])
    assert len(result.content.encode()) <= 16 * 1024
    assert "truncated" in result.content
    [result] = await lw.execute_tools(calls("dump"), [dump], max_output=0)
    assert result.content == "x" * 100_000


async def test_long_error_messages_are_truncated_too() -> None:
    @lw.tool
    def fail() -> str:
        """Fail."""
        raise lw.ToolError("e" * 5000)

    [result] = await lw.execute_tools(calls("fail"), [fail], max_output=500)
    assert result.error is not None
    assert len(result.error.message.encode()) <= 500
    assert "truncated" in result.error.message


# --- configuration errors ----------------------------------------------------------------


async def test_duplicate_tool_names_are_a_configuration_error() -> None:
    other = lw.tool_with(lw.think(), name="add")
    with pytest.raises(lw.ConfigurationError, match="Two tools are named 'add'"):
        await lw.execute_tools(calls("add"), [add, other])
    # the same tool twice is fine
    results = await lw.execute_tools(calls(("add", {"a": 1, "b": 1})), [add, add])
    assert results[0].content == "2"


async def test_plain_functions_are_refused_with_a_hint() -> None:
    def plain(a: int) -> int:
        return a

    with pytest.raises(lw.ConfigurationError, match="is not a Tool; make a function into one"):
        await lw.execute_tools(calls("plain"), [plain])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_output": -1}, "max_output must be >= 0"),
        ({"max_parallel": 0}, "max_parallel must be >= 1"),
    ],
)
async def test_bad_limits_are_configuration_errors(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(lw.ConfigurationError, match=message):
        await lw.execute_tools(calls("add"), [add], **kwargs)  # type: ignore[arg-type]
