"""Live tracing: the spans of scripted runs, from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopwright as lw
import loopwright.otel

SECRET_WORDS = "Ada Lovelace lives at 12 Analytical Lane"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with loopwright.otel.instrument(tracer_provider=provider):
        yield exporter


def call(function: str, arguments: dict[str, object]) -> lw.ModelOutput:
    return lw.ModelOutput.for_tool_call(function, arguments)


def calls(*pairs: tuple[str, dict[str, object]]) -> lw.ModelOutput:
    tool_calls = [
        lw.ToolCall(id=f"call-{i}", function=f, arguments=a) for i, (f, a) in enumerate(pairs)
    ]
    message = lw.AssistantMessage(tool_calls=tool_calls)
    return lw.ModelOutput(
        message=message,
        stop_reason="tool_calls",
        usage=lw.Usage(input_tokens=7, output_tokens=3, total_tokens=10),
    )


MEETING: list[asyncio.Barrier] = []


@lw.tool(parallel=True)
async def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    if MEETING:  # the parallel calls of the scripted run wait for each other
        await asyncio.wait_for(MEETING[0].wait(), 10)
    return f"{city}: sunny"


@lw.tool
async def broken(x: int) -> str:
    """Always fails.

    Args:
        x: Anything.
    """
    raise lw.ToolError(f"cannot do {x}")


@lw.subtask
async def summarise(text: str) -> str:
    model = lw.get_model()
    out = await model.generate([lw.UserMessage(content=text)])
    return out.text


@lw.tool
async def summary(text: str) -> str:
    """Summarise with a subtask.

    Args:
        text: What to summarise.
    """
    return await summarise(text)


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        named.setdefault(s.name, []).append(s)
    return named


def parent(spans: Sequence[ReadableSpan], span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    [found] = [s for s in spans if s.context.span_id == span.parent.span_id]
    return found


async def scripted_run(tmp_path: Path) -> lw.AgentState:
    outputs = [
        calls(("lookup", {"city": "Paris"}), ("lookup", {"city": "Oslo"})),
        call("broken", {"x": 3}),
        call("summary", {"text": SECRET_WORDS}),
        "a summary",  # the subtask's own model call
        call("summary", {"text": "Rome"}),  # its subtask's model call is over the limit
    ]
    model = lw.get_model("mock", outputs=outputs)
    agent = lw.react(tools=[lookup, broken, summary], name="weather")
    MEETING.append(asyncio.Barrier(2))
    try:
        return await lw.run(
            agent, SECRET_WORDS, model=model, db=tmp_path / "runs.db", limits=[lw.step_limit(5)]
        )
    finally:
        MEETING.clear()


async def test_the_span_tree_of_a_run(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    state = await scripted_run(tmp_path)
    assert state.completed == "limit"
    spans = exporter.get_finished_spans()
    named = by_name(spans)
    [run] = named["invoke_agent weather"]
    assert run.parent is None
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["loopwright.run.id"] == state.run_id
    assert run.attributes["loopwright.run.status"] == "limit"
    assert run.attributes["gen_ai.usage.input_tokens"] >= 7  # type: ignore[operator]
    # every span is in the run's trace
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}

    steps = sorted(
        (s for s in spans if s.name.startswith("step ") and parent(spans, s) is run),
        key=lambda s: s.start_time or 0,
    )
    assert [s.name for s in steps] == ["step 1", "step 2", "step 3", "step 4"]
    # step 1: one chat span and the two parallel tool calls, side by side
    first = [s for s in spans if parent(spans, s) is steps[0]]
    assert sorted(s.name for s in first) == [
        "chat mock",
        "execute_tool lookup",
        "execute_tool lookup",
    ]
    [chat] = [s for s in first if s.name == "chat mock"]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "mock"
    assert chat.attributes["gen_ai.request.model"] == "mock"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 7
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tools = [s for s in first if s.name == "execute_tool lookup"]
    ids = sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in tools)
    assert ids == ["call-0", "call-1"]
    for s in tools:
        assert (s.attributes or {})["gen_ai.operation.name"] == "execute_tool"
        assert (s.attributes or {})["gen_ai.tool.name"] == "lookup"
        assert s.status.status_code == StatusCode.UNSET
    # the two calls overlap in time (they ran in parallel)
    a, b = tools
    assert a.start_time is not None and b.start_time is not None
    assert a.end_time is not None and b.end_time is not None
    assert a.start_time < b.end_time and b.start_time < a.end_time

    # step 2: the tool error is the error status and an exception event
    [bad] = named["execute_tool broken"]
    assert parent(spans, bad) is steps[1]
    assert bad.status.status_code == StatusCode.ERROR
    assert (bad.attributes or {})["error.type"] == "tool_error"
    [event] = [e for e in bad.events if e.name == "exception"]
    assert (event.attributes or {})["exception.message"] == "cannot do 3"

    # step 3: the subtask runs inside its tool call, with its own model call
    tool, last_tool = sorted(named["execute_tool summary"], key=lambda s: s.start_time or 0)
    sub, last_sub = sorted(named["subtask summarise"], key=lambda s: s.start_time or 0)
    assert parent(spans, tool) is steps[2]
    assert parent(spans, sub) is tool
    inner = [s for s in spans if parent(spans, s) is sub]
    assert [s.name for s in inner] == ["step 1"]
    assert [s.name for s in spans if parent(spans, s) is inner[0]] == ["chat mock"]

    # step 4: the subtask's model call is over the step limit, which ends the run
    assert parent(spans, last_tool) is steps[3]
    assert parent(spans, last_sub) is last_tool
    for s in (last_tool, last_sub):
        assert s.status.status_code == StatusCode.ERROR
        assert (s.attributes or {})["error.type"] == "LimitExceededError"
    # the limit: an event on the last step, the limit type on the run
    limit_events = [e for e in steps[3].events if e.name == "loopwright.limit"]
    assert len(limit_events) == 1
    assert (limit_events[0].attributes or {})["loopwright.limit.type"] == "step"
    assert run.attributes["loopwright.limit.type"] == "step"
    # spans end within their parents
    for s in spans:
        p = parent(spans, s)
        if p is not None:
            assert p.start_time is not None and s.start_time is not None
            assert p.start_time <= s.start_time
            assert s.end_time is not None and p.end_time is not None
            assert s.end_time <= p.end_time


def all_text(spans: Sequence[ReadableSpan]) -> str:
    parts = []
    for s in spans:
        parts.append(s.name)
        parts += [str(v) for v in (s.attributes or {}).values()]
        for e in s.events:
            parts += [str(v) for v in (e.attributes or {}).values()]
    return "\n".join(parts)


async def test_contents_are_absent_by_default(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    await scripted_run(tmp_path)
    text = all_text(exporter.get_finished_spans())
    assert "Lovelace" not in text
    assert "Paris" not in text
    assert "sunny" not in text
    assert "gen_ai.input.messages" not in json.dumps(
        [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    )


async def test_contents_are_recorded_when_asked(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with loopwright.otel.instrument(tracer_provider=provider, contents=True):
        await scripted_run(tmp_path)
    spans = exporter.get_finished_spans()
    named = by_name(spans)
    first_chat = min(named["chat mock"], key=lambda s: s.start_time or 0)
    messages = json.loads(str((first_chat.attributes or {})["gen_ai.input.messages"]))
    assert messages == [{"role": "user", "parts": [{"type": "text", "content": SECRET_WORDS}]}]
    output = json.loads(str((first_chat.attributes or {})["gen_ai.output.messages"]))
    assert output[0]["finish_reason"] == "tool_calls"
    assert [p["arguments"] for p in output[0]["parts"]] == [{"city": "Paris"}, {"city": "Oslo"}]
    lookups = named["execute_tool lookup"]
    results = {str((s.attributes or {})["gen_ai.tool.call.result"]) for s in lookups}
    assert {"Paris: sunny", "Oslo: sunny"} <= results
    arguments = {str((s.attributes or {})["gen_ai.tool.call.arguments"]) for s in lookups}
    assert '{"city": "Paris"}' in arguments


async def test_contents_are_bounded(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    huge = "x" * 50_000
    model = lw.get_model(
        "mock", outputs=[call("lookup", {"city": huge}), call("submit", {"answer": "ok"})]
    )
    with loopwright.otel.instrument(tracer_provider=provider, contents=True, max_content=1000):
        await lw.run(lw.react(tools=[lookup]), huge, model=model, db=False)
    for s in exporter.get_finished_spans():
        for value in (s.attributes or {}).values():
            assert len(str(value)) < 3000, s.name


async def test_an_error_ending_the_run_is_an_exception_on_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    class Boom(Exception):
        pass

    async def agent(state: lw.AgentState) -> lw.AgentState:
        with lw.span("prepare"):
            raise Boom("the agent broke")

    with pytest.raises(Boom):
        await lw.run(agent, "go", db=False, name="fragile")
    named = by_name(exporter.get_finished_spans())
    [run] = named["invoke_agent fragile"]
    assert run.status.status_code == StatusCode.ERROR
    assert (run.attributes or {})["error.type"] == "Boom"
    assert (run.attributes or {})["loopwright.run.status"] == "error"
    [event] = [e for e in run.events if e.name == "exception"]
    assert (event.attributes or {})["exception.message"] == "the agent broke"
    assert "Traceback" in str((event.attributes or {})["exception.stacktrace"])
    [prepare] = named["prepare"]
    assert prepare.status.status_code == StatusCode.ERROR


async def test_an_agent_used_as_a_tool_runs_its_steps_in_the_tool_call(
    exporter: InMemorySpanExporter,
) -> None:
    helper = lw.react(name="helper", tools=[lookup])
    model = lw.get_model(
        "mock",
        outputs=[
            call("helper", {"input": "Rome?"}),
            call("lookup", {"city": "Rome"}),
            call("submit", {"answer": "sunny"}),
            call("submit", {"answer": "sunny in Rome"}),
        ],
    )
    await lw.run(lw.react(tools=[lw.as_tool(helper)], name="boss"), "go", model=model, db=False)
    spans = exporter.get_finished_spans()
    [tool] = by_name(spans)["execute_tool helper"]
    inner = sorted((s for s in spans if parent(spans, s) is tool), key=lambda s: s.start_time or 0)
    assert [s.name for s in inner] == ["step 1", "step 2"]
    assert sorted(s.name for s in spans if parent(spans, s) is inner[0]) == [
        "chat mock",
        "execute_tool lookup",
    ]


async def test_a_run_inside_a_tool_is_an_invoke_agent_span_in_the_call(
    exporter: InMemorySpanExporter,
) -> None:
    @lw.tool
    async def ask_helper(question: str) -> str:
        """Ask the helper.

        Args:
            question: The question.
        """
        model = lw.get_model("mock", outputs=[call("submit", {"answer": "yes"})])
        state = await lw.run(lw.react(), question, model=model, name="helper")
        return state.output.text if state.output is not None else ""

    model = lw.get_model(
        "mock", outputs=[call("ask_helper", {"question": "?"}), call("submit", {"answer": "y"})]
    )
    await lw.run(lw.react(tools=[ask_helper], name="boss"), "go", model=model, db=False)
    spans = exporter.get_finished_spans()
    named = by_name(spans)
    [tool] = named["execute_tool ask_helper"]
    [inner] = named["invoke_agent helper"]
    assert parent(spans, inner) is tool
    assert (inner.attributes or {})["gen_ai.operation.name"] == "invoke_agent"
    assert [s.name for s in spans if parent(spans, s) is inner] == ["step 1"]


async def test_eval_samples_are_spans_of_the_eval(exporter: InMemorySpanExporter) -> None:
    task = lw.Task(
        dataset=[lw.Sample(input="1+1?", target="2"), lw.Sample(input="2+2?", target="4")],
        agent=lw.react(),
        scorer=lw.match(),
        name="sums",
    )
    model = lw.get_model("mock", outputs=[call("submit", {"answer": "2"})] * 2)
    [result] = await lw.eval_async(task, model=model, db=False)
    assert result.status == "success"
    spans = exporter.get_finished_spans()
    named = by_name(spans)
    [root] = named["invoke_workflow sums"]
    assert (root.attributes or {})["gen_ai.operation.name"] == "invoke_workflow"
    samples = named["invoke_agent sums"]
    assert len(samples) == 2
    for s in samples:
        assert parent(spans, s) is root
        assert (s.attributes or {})["loopwright.eval.sample"] is True
        assert (s.attributes or {})["loopwright.run.id"] == (root.attributes or {})[
            "loopwright.run.id"
        ]


async def test_runs_inside_a_span_of_the_application_are_its_children(
    exporter: InMemorySpanExporter,
) -> None:
    from opentelemetry import trace

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("app").start_as_current_span("request") as request:
        await lw.run(lw.react(), "go", model=lw.get_model("mock"), db=False, name="inner")
    [run] = by_name(exporter.get_finished_spans())["invoke_agent inner"]
    assert run.parent is not None
    assert run.parent.span_id == request.get_span_context().span_id
    del trace


async def test_without_a_tracer_provider_nothing_is_subscribed() -> None:
    from opentelemetry.trace import NoOpTracerProvider

    seen: list[int] = []

    with loopwright.otel.instrument(tracer_provider=NoOpTracerProvider()):

        async def agent(state: lw.AgentState) -> lw.AgentState:
            seen.append(len(lw.transcript()._root.event_subscribers))
            return state

        await lw.run(agent, "go", db=False)
    assert seen == [0]


def test_uninstrument_stops_tracing(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    inst = loopwright.otel.instrument(tracer_provider=provider)
    inst.uninstrument()
    lw.run_sync(lw.react(), "go", model=lw.get_model("mock"), db=False)
    assert exporter.get_finished_spans() == ()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(lw.ConfigurationError, match="max_content"):
        loopwright.otel.instrument(max_content=3)
