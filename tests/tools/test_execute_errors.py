"""``execute_tools``: timeouts, expected errors for the model, and bugs that propagate."""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

import pytest

import loopwright as lw
from loopwright.model import ToolCallErrorType
from loopwright.tools import OutputLimitExceededError


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


# --- timeouts ---------------------------------------------------------------------------


async def test_slow_async_tool_times_out_as_an_error_for_the_model() -> None:
    cancelled = asyncio.Event()

    @lw.tool(timeout=0.2)
    async def hang() -> str:
        """Hang."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    start = time.perf_counter()
    [result] = await lw.execute_tools(calls("hang"), [hang])
    assert time.perf_counter() - start < 2
    assert result.error == lw.ToolCallError(
        type="timeout",
        message="Tool 'hang' did not finish within 0.2 seconds; the call was cancelled.",
    )
    assert result.content == result.error.message
    assert cancelled.is_set()


async def test_slow_sync_tool_times_out_without_waiting_for_its_thread() -> None:
    @lw.tool(timeout=0.2)
    def hang() -> str:
        """Hang."""
        time.sleep(1.0)
        return "late"

    start = time.perf_counter()
    results = await lw.execute_tools(calls("hang", ("add", {"a": 1, "b": 1})), [hang, add])
    assert time.perf_counter() - start < 0.9  # the thread still sleeps; nobody waits for it
    assert results[0].error == lw.ToolCallError(
        type="timeout",
        message="Tool 'hang' did not finish within 0.2 seconds; the call was cancelled.",
    )
    assert results[1].content == "2"


async def test_timeout_error_raised_by_the_tool_is_a_timeout() -> None:
    @lw.tool
    async def fetch() -> str:
        """Fetch."""
        raise TimeoutError("the server did not answer")

    [result] = await lw.execute_tools(calls("fetch"), [fetch])
    assert result.error == lw.ToolCallError(
        type="timeout", message="Tool 'fetch' timed out: the server did not answer"
    )


# --- expected errors ----------------------------------------------------------------------


class LimitError(lw.ToolError):
    error_type: ClassVar[ToolCallErrorType] = "limit"


@pytest.mark.parametrize(
    ("exc", "kind", "text"),
    [
        (lw.ToolError("No such row; use 0..9."), "tool_error", "No such row; use 0..9."),
        (LimitError("Budget used up."), "limit", "Budget used up."),
        (
            PermissionError(13, "Permission denied", "/etc/shadow"),
            "permission",
            "Permission denied: '/etc/shadow'",
        ),
        (
            FileNotFoundError(2, "No such file or directory", "x.txt"),
            "file_not_found",
            "No such file or directory: 'x.txt'",
        ),
        (FileNotFoundError(2, None, "m.py"), "file_not_found", "No such file or directory: 'm.py'"),
        (FileNotFoundError("x.txt is gone"), "file_not_found", "x.txt is gone"),
        (PermissionError(), "permission", "Permission denied."),
        (
            PermissionError(1, "Operation not permitted", "a", None, "b"),
            "permission",
            "Operation not permitted: 'a' -> 'b'",
        ),
        (
            OutputLimitExceededError("The file is 9 MB; read a range.", truncated_output="abc"),
            "output_limit",
            "The file is 9 MB; read a range.\n\nThe output that fits:\nabc",
        ),
        (OutputLimitExceededError("Too big."), "output_limit", "Too big."),
    ],
)
async def test_expected_failures_become_errors_for_the_model(
    exc: Exception, kind: str, text: str
) -> None:
    @lw.tool
    def fail() -> str:
        """Fail."""
        raise exc

    results = await lw.execute_tools(calls("fail", ("add", {"a": 1, "b": 2})), [fail, add])
    assert results[0].error == lw.ToolCallError(type=kind, message=text)  # type: ignore[arg-type]
    assert results[0].content == text
    assert results[1].content == "3"  # the run goes on


async def test_unknown_tool_lists_the_valid_names() -> None:
    [result] = await lw.execute_tools(calls("ad"), [add, lw.think()])
    assert result.error == lw.ToolCallError(
        type="unknown_tool",
        message="Unknown tool 'ad'. Did you mean 'add'? Available tools: add, think.",
    )
    [result] = await lw.execute_tools(calls("zzz"), [add])
    assert result.content == "Unknown tool 'zzz'. Available tools: add."
    [result] = await lw.execute_tools(calls("zzz"), [])
    assert result.content == "Unknown tool 'zzz': no tools are available."


async def test_unparseable_arguments_are_a_parsing_error() -> None:
    msg = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="add", parse_error="Expecting ',' at char 9")]
    )
    [result] = await lw.execute_tools(msg, [add])
    assert result.error is not None and result.error.type == "parsing"
    assert result.content == (
        "Could not parse the arguments of the call to 'add': Expecting ',' at char 9. "
        "Send the arguments as a JSON object matching the tool's parameters."
    )


async def test_invalid_arguments_are_a_validation_error_and_the_tool_does_not_run() -> None:
    ran = False

    @lw.tool
    def f(n: int) -> None:
        """F."""
        nonlocal ran
        ran = True

    [result] = await lw.execute_tools(calls(("f", {"n": "x", "m": 1})), [f])
    assert result.error is not None and result.error.type == "validation"
    assert "- n: Input should be a valid integer" in result.content
    assert "- m: unexpected argument" in result.content
    assert not ran


# --- bugs ---------------------------------------------------------------------------------


async def test_a_bug_in_a_tool_propagates_with_tool_name_and_call_id() -> None:
    @lw.tool
    def broken() -> str:
        """Broken."""
        return str(1 / 0)

    msg = calls("broken")
    with pytest.raises(ZeroDivisionError) as info:
        await lw.execute_tools(msg, [broken])
    assert f"(raised by tool 'broken', call id {msg.tool_calls[0].id})" in info.value.__notes__


async def test_a_bug_cancels_parallel_siblings_and_skips_later_calls() -> None:
    cancelled = asyncio.Event()
    later_ran = False

    @lw.tool(parallel=True)
    async def slow() -> str:
        """Slow."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    @lw.tool(parallel=True)
    async def broken() -> str:
        """Broken."""
        await asyncio.sleep(0.05)
        raise KeyError("oops")

    @lw.tool
    def later() -> None:
        """Later."""
        nonlocal later_ran
        later_ran = True

    start = time.perf_counter()
    with pytest.raises(KeyError):
        await lw.execute_tools(calls("slow", "broken", "later"), [slow, broken, later])
    assert time.perf_counter() - start < 2
    assert cancelled.is_set()
    assert not later_ran


async def test_cancelling_execute_tools_cancels_running_calls_and_waits_for_them() -> None:
    cleaned = asyncio.Event()

    @lw.tool(parallel=True)
    async def slow() -> str:
        """Slow."""
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.set()
        return "never"

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await lw.execute_tools(calls("slow", "slow"), [slow])
    assert cleaned.is_set()  # the call finished cleaning up before execute_tools returned


async def test_a_text_protocol_format_error_reaches_the_model_unwrapped() -> None:
    from loopwright.model.protocols import FORMAT_ERROR_FUNCTION

    text = "Your reply had no Action. Reply as: Thought: ... Action: ... Action Input: ..."
    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function=FORMAT_ERROR_FUNCTION, parse_error=text)]
    )
    [result] = await lw.execute_tools(message, [])
    assert result.text == text
    assert result.error is not None
    assert result.error.type == "parsing"
