import asyncio
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import loopwright as lw
from loopwright.transcripts import current_transcript

FAST = lw.GenerateConfig(retry_wait=0.001, max_retry_wait=0.01)


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    lw.store().get("sums", []).append(a + b)
    return a + b


@lw.tool
def fail() -> str:
    """Always fails."""
    raise lw.ToolError("no luck")


@pytest.fixture
def recorded() -> Iterator[tuple[lw.Transcript, list[tuple[str, Any]]]]:
    """A transcript installed with a fresh store, and the notifications it sent."""
    t = lw.Transcript()
    seen: list[tuple[str, Any]] = []
    t.subscribe(
        lambda e: seen.append((e.event, getattr(e, "pending", None))),
        on_message=lambda m: seen.append(("message", m.role)),
    )
    with lw.store_context(lw.Store()), lw.transcript_context(t):
        yield t, seen


async def test_a_scripted_run_emits_exactly_these_events(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, seen = recorded
    model = lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 2, "b": 3}), "It is 5."]
    )
    messages: list[lw.ChatMessage] = [lw.UserMessage(content="2+3?")]
    out = await model.generate(messages, [add])
    messages.append(out.message)
    messages.extend(await lw.execute_tools(out.message, [add]))
    lw.transcript().info("thinking done")
    out = await model.generate(messages, [add])

    assert [e.event for e in t.events] == ["model", "tool", "info", "model"]
    assert [e.event for e in t.walk()] == ["model", "tool", "store", "info", "model"]
    assert seen == [
        ("message", "user"),
        ("model", True),
        ("message", "assistant"),
        ("model", None),
        ("tool", True),
        ("store", None),
        ("message", "tool"),
        ("tool", None),
        ("info", None),
        ("model", True),
        ("message", "assistant"),
        ("model", None),
    ]
    m1, tool_ev, info, m2 = t.events
    assert isinstance(m1, lw.ModelEvent) and isinstance(m2, lw.ModelEvent)
    assert isinstance(tool_ev, lw.ToolEvent) and isinstance(info, lw.InfoEvent)
    assert m1.model == "mock" and [ti.name for ti in m1.tools] == ["add"]
    assert m1.output is not None and m1.output.tool_calls[0].function == "add"
    assert m1.usage is not None and m1.usage.total_tokens > 0
    assert m1.input == [messages[0].id] and m1.input_base is None
    # the second call refers to the first call's input and lists only what is new
    assert m2.input_base == m1.id and m2.input_base_count == 1
    assert m2.input == [messages[1].id, messages[2].id]
    assert [m.id for m in t.model_input(m2)] == [m.id for m in messages]
    assert tool_ev.call.function == "add" and tool_ev.arguments == {"a": 2, "b": 3}
    assert tool_ev.result is not None and tool_ev.result.content == "5"
    assert tool_ev.error is None and tool_ev.failure is None and tool_ev.duration >= 0
    store_ev = tool_ev.events[0]
    assert isinstance(store_ev, lw.StoreEvent) and store_ev.span_id == tool_ev.id
    assert store_ev.changes == [{"op": "add", "path": "/sums", "value": [5]}]
    assert info.data == "thinking done"
    assert all(e.span_id is None for e in t.events)
    starts = [e.working_start for e in t.walk()]
    assert starts == sorted(starts) and starts[-1] > 0
    assert len({e.id for e in t.walk()}) == 5


async def test_tool_errors_are_recorded_as_data(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, _ = recorded
    msg = lw.ModelOutput.for_tool_call("fail").message
    [result] = await lw.execute_tools(msg, [fail])
    ev = t.events[0]
    assert isinstance(ev, lw.ToolEvent)
    assert ev.error is not None and ev.error.type == "tool_error" and "no luck" in ev.error.message
    assert ev.result is not None and ev.result.id == result.id


async def test_events_during_a_tool_call_nest_in_its_event(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, _ = recorded
    inner = lw.get_model("mock", outputs=["inner answer"], repeat=True)

    @lw.tool
    async def ask(question: str) -> str:
        """Ask a sub-model.

        Args:
            question: What to ask.
        """
        await asyncio.sleep(0.01)
        out = await inner.generate([lw.UserMessage(content=question)])
        lw.transcript().info(f"asked {question}")
        return out.text

    calls = lw.AssistantMessage(
        tool_calls=[
            lw.ToolCall(function="ask", arguments={"question": "one"}),
            lw.ToolCall(function="ask", arguments={"question": "two"}),
        ]
    )
    await lw.execute_tools(calls, [ask])
    assert [e.event for e in t.events] == ["tool", "tool"]
    for ev, q in zip(t.events, ["one", "two"], strict=True):
        assert isinstance(ev, lw.ToolEvent)
        assert [e.event for e in ev.events] == ["model", "info"]
        assert all(e.span_id == ev.id for e in ev.events)
        info = ev.events[1]
        assert isinstance(info, lw.InfoEvent) and info.data == f"asked {q}"


async def test_a_failed_model_call_is_recorded_with_its_error_and_retries(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, _ = recorded
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelAPIError("overloaded", retryable=True),
            lw.ModelAPIError("bad request", status_code=400),
        ],
        config=FAST,
    )
    with pytest.raises(lw.ModelAPIError):
        await model.generate([lw.UserMessage(content="hi")])
    ev, retry = t.events  # the model call, and the warning that it was retried
    assert isinstance(ev, lw.ModelEvent) and isinstance(retry, lw.LoggerEvent)
    assert ev.output is None and ev.pending is None
    assert ev.error == "ModelAPIError: bad request"
    assert ev.retries == 1 and ev.wait_time > 0
    assert ev.working_time == pytest.approx(ev.duration - ev.wait_time)


async def test_prefix_sharing_survives_pruned_history_and_ephemeral_messages(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, _ = recorded
    model = lw.get_model("mock", outputs=["ok"], repeat=True)
    history: list[lw.ChatMessage] = [lw.SystemMessage(content="sys"), lw.UserMessage(content="q")]
    for i in range(4):
        nudge = lw.UserMessage(content=f"continue {i}")  # not kept in the history
        out = await model.generate([*history, nudge])
        history.append(out.message)
    pruned = [history[0], *history[3:]]
    await model.generate(pruned)
    events = [e for e in t.events if isinstance(e, lw.ModelEvent)]
    # each call lists only its own new messages: the previous output and its nudge
    assert [len(e.input) for e in events] == [3, 2, 2, 2, 3]
    assert events[4].input_base_count == 1  # only the system message is shared
    for ev, expected in zip(
        events, [[*history[:2]], *[[*history[: 2 + i]] for i in range(1, 4)], pruned], strict=True
    ):
        got = t.model_input(ev)
        assert [m.id for m in got[: len(expected)]] == [m.id for m in expected]


async def test_spans_group_events_sync_and_async(
    recorded: tuple[lw.Transcript, list[tuple[str, Any]]],
) -> None:
    t, _ = recorded
    with lw.span("outer", type="step") as outer:
        lw.transcript().info("a")
        async with lw.span("inner") as inner:
            lw.store().set("k", 1)
            lw.transcript().info("b")
    with pytest.raises(ValueError, match="boom"), lw.span("broken"):
        raise ValueError("boom")
    kinds = [(e.event, e.span_id) for e in t.events]
    assert kinds == [
        ("span_begin", None),
        ("info", outer.id),
        ("span_begin", outer.id),
        ("info", inner.id),
        ("store", inner.id),
        ("span_end", outer.id),
        ("span_end", None),
        ("span_begin", None),
        ("span_end", None),
    ]
    begin = t.events[0]
    assert isinstance(begin, lw.SpanBegin) and begin.name == "outer" and begin.type == "step"
    end = t.events[-1]
    assert isinstance(end, lw.SpanEnd) and end.error == "ValueError: boom"
    assert end.begin == t.events[-2].id


def test_info_takes_strings_and_json_data_only() -> None:
    t = lw.Transcript()
    assert t.info({"found": [1, 2]}, source="search").data == {"found": [1, 2]}
    with pytest.raises(TypeError, match="JSON-serialisable"):
        t.info(object())


async def test_python_logging_is_captured_at_or_above_the_level() -> None:
    logger = logging.getLogger("lwtest.capture")
    logger.setLevel(logging.DEBUG)
    t = lw.Transcript(log_level=logging.INFO)
    with lw.transcript_context(t):
        logger.debug("too low")
        logger.info("step %d", 3)
        try:
            raise RuntimeError("bad")
        except RuntimeError:
            logger.exception("it failed")
    events = [e for e in t.events if isinstance(e, lw.LoggerEvent)]
    assert [(e.level, e.logger) for e in events] == [
        ("INFO", "lwtest.capture"),
        ("ERROR", "lwtest.capture"),
    ]
    assert events[0].message == "step 3"
    assert "RuntimeError: bad" in events[1].message and events[1].lineno
    t.log_level = logging.ERROR
    with lw.transcript_context(t):
        logger.warning("now ignored")
    assert len([e for e in t.events if isinstance(e, lw.LoggerEvent)]) == 2


def test_outside_a_transcript_unconfigured_warnings_still_reach_stderr() -> None:
    # pytest configures logging, so this needs a fresh interpreter
    script = """
import asyncio, logging
import loopwright as lw

async def main():
    with lw.transcript_context(lw.Transcript()) as t:
        logging.getLogger("app").warning("captured warning")
    logging.getLogger("app").warning("visible warning")
    print(len(t.events))

asyncio.run(main())
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "1"
    assert "visible warning" in proc.stderr
    assert "captured warning" not in proc.stderr


def test_a_failing_subscriber_is_removed_logged_and_warned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    t = lw.Transcript()
    calls: list[str] = []

    def broken(event: lw.Event) -> None:
        calls.append(event.event)
        raise RuntimeError("display bug")

    t.subscribe(broken)
    # inside a run the log record goes into the transcript only: the warning is seen
    with caplog.at_level(logging.ERROR, logger="loopwright.transcripts"):
        with pytest.warns(RuntimeWarning, match="display bug"):
            t.info("one")
        t.info("two")
    assert calls == ["info"]
    assert "display bug" in caplog.text
    assert len(t.events) == 2


def test_unsubscribe_and_observers() -> None:
    got: list[str] = []
    with lw.observe_transcripts(lambda e: got.append(e.event)):
        t = lw.Transcript()
    u = lw.Transcript()
    t.info("seen")
    u.info("not seen")
    assert got == ["info"]
    stop = t.subscribe(lambda e: got.append("second"))
    stop()
    t.info("again")
    assert got == ["info", "info"]


async def test_transcript_outside_a_run_is_created_per_context() -> None:
    async def task() -> lw.Transcript:
        return lw.transcript()

    a, b = await asyncio.gather(asyncio.create_task(task()), asyncio.create_task(task()))
    assert a is not b
    t = lw.Transcript()
    with lw.transcript_context(t):
        assert lw.transcript() is t and current_transcript() is t


async def test_model_calls_outside_a_transcript_record_nothing() -> None:
    model = lw.get_model("mock", outputs=["x"])
    out = await model.generate([lw.UserMessage(content="hi")])
    assert out.text == "x"


async def test_errors_are_recorded_alike_by_spans_subtasks_and_tool_calls() -> None:
    t = lw.Transcript()
    with lw.transcript_context(t):
        with pytest.raises(ValueError), lw.span("s"):
            raise ValueError()
        with pytest.raises(ValueError):
            await lw.subtask(_fail_empty)()
    texts = [getattr(e, "error", None) for e in t.walk() if getattr(e, "error", None)]
    assert texts == ["ValueError", "ValueError"]  # the span wrote "ValueError: "


async def _fail_empty() -> None:
    raise ValueError()
