"""The span builder on its own: events as a killed run leaves them, hostile names, and
the standard environment variable for contents."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopwright as lw
import loopwright.otel
from loopwright.otel._builder import Options, TraceBuilder, ns


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp, exporter


def test_calls_still_pending_when_a_run_died_end_with_it_marked_unfinished() -> None:
    tp, exporter = provider()
    tracer = tp.get_tracer("test")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    builder = TraceBuilder(
        tracer, tracer.start_span("run", start_time=ns(start)), Options(), live=False
    )
    model = lw.ModelEvent(timestamp=start, model="openai/gpt-x", duration=1.0)
    model.output = lw.ModelOutput.for_tool_call("slow", {})
    tool = lw.ToolEvent(
        timestamp=start + timedelta(seconds=1), call=lw.ToolCall(function="slow"), pending=True
    )
    for ev in (model, tool):
        builder.on_event(ev)
    builder.close(ns(start + timedelta(seconds=5)))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"run", "step 1", "chat gpt-x", "execute_tool slow"}
    assert (spans["execute_tool slow"].attributes or {})["loopwright.unfinished"] is True
    assert spans["execute_tool slow"].end_time == ns(start + timedelta(seconds=5))
    chat = spans["chat gpt-x"]
    assert (chat.attributes or {})["gen_ai.provider.name"] == "openai"
    assert (chat.attributes or {})["gen_ai.system"] == "openai"
    assert chat.end_time == ns(start + timedelta(seconds=1))  # recorded start + duration


async def test_a_tool_name_from_the_model_is_bounded() -> None:
    tp, exporter = provider()
    long_name = "x" * 5000
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call(long_name, {}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "ok"}),
        ],
    )
    with loopwright.otel.instrument(tracer_provider=tp):
        await lw.run(lw.react(), "go", model=model, db=False)
    [tool] = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool x")]
    assert len(tool.name) < 250
    name = str((tool.attributes or {})["gen_ai.tool.name"])
    assert name == "x" * 200 + "...[5,000 characters, cut]"  # cut, saying so
    assert tool.status.status_code == StatusCode.ERROR  # no such tool: an error for the model


async def test_a_cancelled_run_is_marked_cancelled() -> None:
    tp, exporter = provider()
    started = asyncio.Event()

    async def agent(state: lw.AgentState) -> lw.AgentState:
        started.set()
        await asyncio.sleep(60)
        return state

    with loopwright.otel.instrument(tracer_provider=tp):
        task = asyncio.create_task(lw.run(agent, "go", db=False, name="slow"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    [run] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent slow"]
    assert (run.attributes or {})["loopwright.run.status"] == "cancelled"
    assert (run.attributes or {})["error.type"] == "CancelledError"


async def test_the_standard_variable_turns_contents_on(monkeypatch: pytest.MonkeyPatch) -> None:
    tp, exporter = provider()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "42"})])
    with loopwright.otel.instrument(tracer_provider=tp):
        await lw.run(lw.react(), "the question", model=model, db=False)
    [chat] = [s for s in exporter.get_finished_spans() if s.name == "chat mock"]
    assert "the question" in str((chat.attributes or {})["gen_ai.input.messages"])
    # an explicit False wins over the variable
    exporter.clear()
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "42"})])
    with loopwright.otel.instrument(tracer_provider=tp, contents=False):
        await lw.run(lw.react(), "the question", model=model, db=False)
    [chat] = [s for s in exporter.get_finished_spans() if s.name == "chat mock"]
    assert "gen_ai.input.messages" not in (chat.attributes or {})


def test_instrument_again_replaces_the_earlier_one() -> None:
    tp, exporter = provider()
    first = loopwright.otel.instrument(tracer_provider=tp)
    second = loopwright.otel.instrument(tracer_provider=tp)
    try:
        lw.run_sync(lw.react(), "go", model=lw.get_model("mock"), db=False, name="once")
    finally:
        second.uninstrument()
        first.uninstrument()
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent once"]
    assert len(runs) == 1


def test_live_a_finished_span_is_let_go_and_a_second_notice_of_its_end_ignored() -> None:
    tp, exporter = provider()
    tracer = tp.get_tracer("test")
    builder = TraceBuilder(tracer, tracer.start_span("run"), Options())
    tool = lw.ToolEvent(call=lw.ToolCall(function="f"), pending=True)
    builder.on_event(tool)
    tool.pending = None
    builder.on_event(tool)
    builder.on_event(tool)  # told twice (a subscriber may be)
    assert builder._spans == {}  # nothing kept for a call that ended
    builder.close()
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool f", "run"]


async def test_an_exported_run_ends_the_steps_of_an_agent_used_as_a_tool_with_the_call(
    tmp_path: Path,
) -> None:
    tp, exporter = provider()
    helper = lw.react(name="helper")
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("helper", {"input": "?"}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "inner"}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "outer"}),
        ],
    )
    db = tmp_path / "runs.db"
    state = await lw.run(lw.react(tools=[lw.as_tool(helper)]), "go", model=model, db=db)
    loopwright.otel.export_spans(state.run_id, db=db, tracer_provider=tp)
    spans = exporter.get_finished_spans()
    [tool] = [s for s in spans if s.name == "execute_tool helper"]
    inner = [s for s in spans if s.parent is not None and s.parent.span_id == tool.context.span_id]
    assert [s.name for s in inner] == ["step 1"]
    assert inner[0].end_time == tool.end_time  # not the run's end


@pytest.mark.parametrize("contents", [False, True])
async def test_info_and_log_records_are_span_events_their_text_only_with_contents(
    contents: bool,
) -> None:
    import logging

    tp, exporter = provider()

    async def agent(state: lw.AgentState) -> lw.AgentState:
        lw.transcript().info("a private note", source="me")
        logging.getLogger("app").warning("a private warning")
        return state

    with loopwright.otel.instrument(tracer_provider=tp, contents=contents):
        await lw.run(agent, "go", db=False, name="noting")
    [run] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent noting"]
    events = {e.name: dict(e.attributes or {}) for e in run.events}
    assert events["loopwright.info"]["source"] == "me"
    assert events["loopwright.log"]["level"] == "WARNING"
    assert events["loopwright.log"]["logger"] == "app"
    texts = repr(events)
    assert ("a private note" in texts) is contents
    assert ("a private warning" in texts) is contents
