"""lw.run_stream(): a run's events as they happen, from a real SSE server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.agents._stream_events import EventBuffer
from loopwright.log import list_runs, load_run
from loopwright.transcripts import ToolEvent
from tests.model.providers.sse_server import (
    OPENAI_DONE,
    SSEServer,
    Stream,
    openai_delta,
    openai_text_stream,
    openai_tool_delta,
    openai_usage,
)

pytest.importorskip("openai")

FAST = lw.GenerateConfig(retry_wait=0.01, max_retry_wait=0.05)
call = lw.ModelOutput.for_tool_call


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return a + b


@lw.tool
async def slow(seconds: float) -> str:
    """Wait.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "waited"


@pytest.fixture
def sse() -> Iterator[SSEServer]:
    with SSEServer() as server:
        yield server


def model(sse: SSEServer) -> lw.Model:
    return lw.get_model("openai/m", base_url=sse.url + "/v1", api_key="k", config=FAST)


def tool_step(text: list[str], name: str, arguments: list[str]) -> Stream:
    return Stream(
        [
            openai_delta(role="assistant", content=""),
            *(openai_delta(content=t) for t in text),
            openai_tool_delta(0, id=f"call_{name}", name=name, arguments=""),
            *(openai_tool_delta(0, arguments=a) for a in arguments),
            openai_delta(finish="tool_calls"),
            openai_usage(),
            OPENAI_DONE,
        ]
    )


def adder_script(sse: SSEServer) -> None:
    sse.push(
        tool_step(["I will ", "add."], "add", ['{"a": 2', ', "b": 3}']),
        tool_step(["Done."], "submit", ['{"answer"', ': "5"}']),
    )


async def test_a_streamed_run_yields_typed_events_in_order(sse: SSEServer, tmp_path: Path) -> None:
    adder_script(sse)
    db = tmp_path / "runs.db"
    events: list[Any] = []
    async with lw.run_stream(lw.react(tools=[add]), "2+3?", model=model(sse), db=db) as stream:
        async for event in stream:
            events.append(event)
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "TextDelta",
        "TextDelta",
        "ModelReplied",
        "ToolCallStarted",
        "ToolCallFinished",
        "StepFinished",
        "TextDelta",
        "ModelReplied",
        "ToolCallStarted",
        "ToolCallFinished",
        "StepFinished",
        "RunFinished",
    ]
    assert "".join(e.text for e in events[:2]) == "I will add."
    started, finished = events[3], events[4]
    assert started.call.function == "add" and started.call.arguments == {"a": 2, "b": 3}
    assert finished.call is started.call and finished.result.text == "5"
    assert [e.step for e in events if isinstance(e, lw.StepFinished)] == [1, 2]
    final = events[-1].state
    assert final is stream.state and final.text == "5" and final.completed == "submit"
    # the same objects the transcript recorded; the run store has a normal, successful run
    [info] = list_runs(db)
    assert info.status == "success" and info.output == "5"
    with load_run(info.id, db=db) as log:
        tools = [e for e in log.events() if isinstance(e, ToolEvent)]
    assert [t.call.id for t in tools] == [started.call.id, events[8].call.id]
    assert events[2].output.message in final.messages


async def test_streamed_and_plain_runs_record_the_same_run(tmp_path: Path) -> None:
    def script() -> lw.Model:
        steps = [call("add", {"a": 2, "b": 3}), call("submit", {"answer": "5"})]
        return lw.get_model("mock", outputs=steps)

    db = tmp_path / "runs.db"
    async with lw.run_stream(lw.react(tools=[add]), "2+3?", model=script(), db=db) as s:
        async for _ in s:
            pass
    plain = await lw.run(lw.react(tools=[add]), "2+3?", model=script(), db=db)

    def shape(messages: list[lw.ChatMessage]) -> list[Any]:
        return [(m.role, m.text, [(c.function, c.arguments) for c in getattr(m, "tool_calls", ())])
                for m in messages]  # fmt: skip

    assert shape(s.state.messages) == shape(plain.messages)
    runs = list_runs(db)
    assert [r.status for r in runs] == ["success", "success"]
    kinds = []
    for info in runs:
        with load_run(info.id, db=db) as log:
            kinds.append([type(e).__name__ for e in log.events()])
    assert kinds[0] == kinds[1]


async def test_leaving_early_cancels_the_run_and_records_it(sse: SSEServer, tmp_path: Path) -> None:
    gate = threading.Event()  # the server holds the rest of the reply until set
    reply = openai_text_stream(["first", " second", " third"])
    sse.push(Stream(reply, gate=gate, gate_after=2))
    db = tmp_path / "runs.db"
    try:
        async with lw.run_stream(lw.react(), "go", model=model(sse), db=db) as stream:
            async for event in stream:
                assert event == lw.TextDelta("first")
                break
        assert stream.cancelled
        assert asyncio.all_tasks() == {asyncio.current_task()}
    finally:
        gate.set()
    [info] = list_runs(db)
    assert info.status == "cancelled"


async def test_a_consumer_that_raises_ends_the_run(sse: SSEServer, tmp_path: Path) -> None:
    sse.push(tool_step(["calling"], "slow", ['{"seconds": 30}']))
    db = tmp_path / "runs.db"
    s = lw.run_stream(lw.react(tools=[slow]), "go", model=model(sse), db=db)

    async def consume() -> None:
        async with s:
            async for event in s:
                if isinstance(event, lw.ToolCallStarted):
                    raise ValueError("consumer broke")

    with pytest.raises(ValueError, match="consumer broke"):
        await consume()
    assert s.cancelled
    assert asyncio.all_tasks() == {asyncio.current_task()}
    [info] = list_runs(db)
    assert info.status == "cancelled"


async def test_cancelling_the_consumer_cancels_the_run(sse: SSEServer, tmp_path: Path) -> None:
    sse.push(tool_step(["calling"], "slow", ['{"seconds": 30}']))
    db = tmp_path / "runs.db"
    started = asyncio.Event()
    holder: list[lw.RunStream] = []

    async def consume() -> None:
        async with lw.run_stream(lw.react(tools=[slow]), "go", model=model(sse), db=db) as s:
            holder.append(s)
            async for event in s:
                if isinstance(event, lw.ToolCallStarted):
                    started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert holder[0].cancelled
    assert asyncio.all_tasks() == {asyncio.current_task()}
    [info] = list_runs(db)
    assert info.status == "cancelled"


async def test_an_error_of_the_run_comes_after_the_events_before_it(tmp_path: Path) -> None:
    boom = lw.get_model("mock", outputs=[call("add", {"a": 1, "b": 1}), RuntimeError("boom")])
    seen: list[str] = []

    async def consume() -> None:
        async for event in lw.run_stream(lw.react(tools=[add]), "go", model=boom, db=False):
            seen.append(type(event).__name__)

    with pytest.raises(RuntimeError, match="boom"):
        await consume()
    assert "ToolCallFinished" in seen and "RunFinished" not in seen


async def test_a_denied_call_never_shows_as_started() -> None:
    class Deny(lw.Hooks):
        async def before_tool(self, call: lw.ToolCall) -> str | None:
            return "no" if call.function == "add" else None

    script = [call("add", {"a": 1, "b": 1}), call("submit", {"answer": "x"})]
    events = [
        e
        async for e in lw.run_stream(
            lw.react(tools=[add]),
            "go",
            model=lw.get_model("mock", outputs=script),
            db=False,
            hooks=[Deny()],
        )
    ]
    started = [e.call.function for e in events if isinstance(e, lw.ToolCallStarted)]
    finished = [e for e in events if isinstance(e, lw.ToolCallFinished)]
    assert started == ["submit"]
    # a denied call never ran: no after_tool, so no event either (the state has it)
    assert [e.call.function for e in finished] == ["submit"]
    final = events[-1].state
    denied = [m for m in final.messages if isinstance(m, lw.ToolMessage) and m.function == "add"]
    assert denied[0].error is not None and denied[0].error.type == "approval"


async def test_the_buffer_joins_deltas_when_full_and_holds_other_events() -> None:
    buffer = EventBuffer(max_events=2)
    buffer.put_delta(lw.TextDelta("a"))
    buffer.put_delta(lw.TextDelta("b"))
    for piece in "cdef":  # full: joined into the tail, the run never waits
        buffer.put_delta(lw.TextDelta(piece))
    assert len(buffer) == 2
    state = lw.AgentState()
    put = asyncio.create_task(buffer.put(lw.StepFinished(1, state)))
    await asyncio.sleep(0)
    assert not put.done()  # a step waits for room
    assert await buffer.get() == lw.TextDelta("a")
    await put
    assert await buffer.get() == lw.TextDelta("bcdef")
    assert await buffer.get() == lw.StepFinished(1, state)
    buffer.close()
    assert await buffer.get() is None


def test_bad_arguments_are_refused_before_anything_runs() -> None:
    with pytest.raises(lw.ConfigurationError, match="max_events"):
        lw.run_stream(lw.react(), "x", max_events=0)
    with pytest.raises(lw.ConfigurationError, match="input"):
        lw.run_stream(lw.react(), 42)  # type: ignore[arg-type]


async def test_leaving_early_cleans_up_the_runs_sandbox(sse: SSEServer, tmp_path: Path) -> None:
    roots: list[Path] = []

    @lw.tool
    async def hold() -> str:
        """Hold the sandbox."""
        roots.append(Path(lw.sandbox().root))  # type: ignore[attr-defined]
        await asyncio.sleep(30)
        return "held"

    sse.push(tool_step(["working"], "hold", ["{}"]))
    stream = lw.run_stream(lw.react(tools=[hold]), "go", model=model(sse), db=False,
                           sandbox="local")  # fmt: skip
    async with stream:
        async for event in stream:
            if isinstance(event, lw.ToolCallStarted):
                for _ in range(1000):  # until the tool holds the sandbox
                    if roots:
                        break
                    await asyncio.sleep(0.01)
                break
    assert stream.cancelled
    assert roots and not roots[0].exists()  # the sandbox was removed before we went on
