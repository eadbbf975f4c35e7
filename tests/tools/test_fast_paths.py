"""The cheap paths of tool execution behave like the general ones: a call alone in its
batch, arguments without nulls, and the built-in tools that run on the event loop."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopwright as lw
from loopwright.tools import _tool
from loopwright.tools._jsonschema import has_null
from loopwright.tools.builtin import submit, think


def calls(*names: str, **args: Any) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=n, arguments=args) for n in names])


# strings without an "n": the JSON literal null can only come from a None
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet="abc", max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="abc", max_size=2), inner)
    ),
    max_leaves=12,
)


@given(json_values)
def test_has_null_finds_a_null_at_any_depth(value: Any) -> None:
    assert has_null(value) == ("null" in json.dumps(value))


def test_has_null_examples() -> None:
    assert not has_null({"a": 1, "b": [1, "x", {"c": False}]})
    assert has_null({"a": 1, "b": [1, {"c": None}]})
    assert has_null(None)
    assert not has_null("null")


@pytest.mark.parametrize("batch", [("slow",), ("slow", "slow")])
async def test_a_cancelled_call_that_swallows_the_cancellation_still_cancels(
    batch: tuple[str, ...],
) -> None:
    started = asyncio.Event()
    cleaned = asyncio.Event()

    @lw.tool(parallel=True)
    async def slow() -> str:
        """Slow, and it swallows cancellation."""
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cleaned.set()
        return "returned anyway"

    task = asyncio.create_task(lw.execute_tools(calls(*batch), [slow]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()


async def test_a_call_alone_still_runs_in_its_own_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="outer")

    @lw.tool
    async def setter() -> str:
        """Sets a context variable."""
        var.set("inner")
        return var.get()

    [result] = await lw.execute_tools(calls("setter"), [setter])
    assert result.content == "inner"
    assert var.get() == "outer"  # the call's change did not leak into the caller


async def test_terminated_alone_reports_no_finished_results() -> None:
    async def terminate(call: lw.ToolCall, messages: Any) -> lw.Approval:
        return lw.Approval(decision="terminate", explanation="stop here")

    @lw.tool
    async def f() -> str:
        """F."""
        return "ran"

    with lw.approver(terminate), pytest.raises(lw.ToolTerminated) as info:
        await lw.execute_tools(calls("f"), [f])
    assert info.value.messages == []


@pytest.mark.parametrize("make", [submit, think])
async def test_trivial_builtins_run_without_a_worker_thread(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    builtin: lw.Tool[..., Any] = make()

    async def no_threads(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker thread was used")

    monkeypatch.setattr(_tool, "run_in_thread", no_threads)
    name = builtin.name
    param = "answer" if make is submit else "thought"
    loop_thread = threading.get_ident()
    [result] = await lw.execute_tools(calls(name, **{param: "x"}), [builtin])
    assert result.error is None
    assert result.content == ("x" if make is submit else "")
    assert threading.get_ident() == loop_thread


async def test_a_renamed_submit_keeps_running_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_threads(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker thread was used")

    monkeypatch.setattr(_tool, "run_in_thread", no_threads)
    done = lw.tool_with(submit(), name="done")
    [result] = await lw.execute_tools(calls("done", answer="42"), [done])
    assert result.content == "42"


async def test_a_call_alone_waits_in_the_callers_task_and_gets_what_is_thrown_in() -> None:
    """The call alone is driven in its own context by the caller's task: futures it
    waits for are waited for by that task, their exceptions reach the tool, and a
    bare yield (``sleep(0)``) is passed through."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[str] = loop.create_future()
    log: list[str] = []

    @lw.tool
    async def waits() -> str:
        """Waits for a future that fails."""
        await asyncio.sleep(0)
        try:
            await fut
        except ValueError as ex:
            log.append(f"caught {ex}")
        await asyncio.sleep(0)
        return "after"

    task = asyncio.create_task(lw.execute_tools(calls("waits"), [waits]))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done()
    fut.set_exception(ValueError("boom"))
    [result] = await task
    assert log == ["caught boom"]
    assert result.content == "after"
    assert result.error is None
