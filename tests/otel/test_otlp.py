"""OTLP over HTTP to a receiver on 127.0.0.1: live tracing, the command line's
``LOOPWRIGHT_OTEL=1`` and ``runs export --format otlp``; what arrives is decoded with
opentelemetry-proto."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import loopwright as lw
import loopwright.otel

from ..cli._cli import cli, script
from ._receiver import Receiver


def call(function: str, arguments: dict[str, object]) -> lw.ModelOutput:
    return lw.ModelOutput.for_tool_call(function, arguments)


@lw.tool
def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: One.
        b: Two.
    """
    return a + b


async def test_live_spans_arrive_over_otlp_http(receiver: Receiver) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.url)))
    model = lw.get_model(
        "mock", outputs=[call("add", {"a": 2, "b": 3}), call("submit", {"answer": "5"})]
    )
    with loopwright.otel.instrument(tracer_provider=provider):
        state = await lw.run(lw.react(tools=[add], name="adder"), "2+3?", model=model, db=False)
    assert provider.force_flush(10_000)
    provider.shutdown()
    assert set(receiver.paths) == {"/v1/traces"}
    [run] = receiver.named("invoke_agent adder")
    assert run.attributes["loopwright.run.id"] == state.run_id
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    [tool] = receiver.named("execute_tool add")
    assert tool.attributes["gen_ai.tool.name"] == "add"
    chats = receiver.named("chat mock")
    assert len(chats) == 2
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert {s.trace_id for s in receiver.spans} == {run.trace_id}
    steps = {s.span_id for s in receiver.spans if s.name.startswith("step ")}
    assert tool.parent_span_id in steps
    assert "2+3" not in repr([s.attributes for s in receiver.spans])  # no contents


def test_the_command_line_traces_with_loopwright_otel(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = script(tmp_path / "s.json", [{"tool": "think", "arguments": {"thought": "x"}}, "4"])
    monkeypatch.setenv("LOOPWRIGHT_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "cli-test")
    r = cli("run", "2+2?", "--model", "mock", "-M", outputs, "--tool", "think", cwd=tmp_path)
    assert r.code == 0, r.err
    [run] = [s for s in receiver.spans if s.name.startswith("invoke_agent")]
    assert run.service == "cli-test"
    [stored] = lw.list_runs(tmp_path / "runs.db")
    assert run.attributes["loopwright.run.id"] == stored.id
    assert receiver.named("execute_tool think")


def test_a_bad_loopwright_otel_value_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_OTEL", "jaeger")
    r = cli("runs", "list", cwd=tmp_path)
    assert r.code == 2
    assert "LOOPWRIGHT_OTEL" in r.err


def test_a_recorded_run_is_exported_over_otlp(tmp_path: Path, receiver: Receiver) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model(
        "mock", outputs=[call("add", {"a": 1, "b": 1}), call("submit", {"answer": "Ada 2"})]
    )
    state = lw.run_sync(lw.react(tools=[add], name="adder"), "1+1 for Ada?", model=model, db=db)
    r = cli(
        "runs",
        "export",
        state.run_id,
        "--format",
        "otlp",
        "--endpoint",
        receiver.url,
        cwd=tmp_path,
        db=db,
    )
    assert r.code == 0, r.err
    assert "sent " in r.err
    [run] = receiver.named("invoke_agent adder")
    assert run.attributes["loopwright.run.id"] == state.run_id
    assert run.attributes["loopwright.run.status"] == "success"
    assert run.parent_span_id == b""
    steps = sorted(s.name for s in receiver.spans if s.parent_span_id == run.span_id)
    assert steps == ["step 1", "step 2"]
    [tool] = receiver.named("execute_tool add")
    assert "gen_ai.tool.call.arguments" not in tool.attributes
    assert "Ada" not in repr([s.attributes for s in receiver.spans])
    # with --contents the conversation goes too
    receiver.spans.clear()
    r = cli(
        "runs",
        "export",
        state.run_id,
        "--format",
        "otlp",
        "--endpoint",
        receiver.url,
        "--contents",
        cwd=tmp_path,
        db=db,
    )
    assert r.code == 0, r.err
    [tool] = receiver.named("execute_tool add")
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 1}'
    assert tool.attributes["gen_ai.tool.call.result"] == "2"
    assert any(
        "1+1 for Ada?" in str(s.attributes.get("gen_ai.input.messages")) for s in receiver.spans
    )


@pytest.mark.slow  # the exporter retries for a while
def test_exporting_to_an_endpoint_that_is_down_fails_clearly(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    lw.run_sync(lw.react(), "go", model=lw.get_model("mock"), db=db)
    r = cli(
        "runs",
        "export",
        "--format",
        "otlp",
        "--endpoint",
        "http://127.0.0.1:9/v1/traces",
        cwd=tmp_path,
        db=db,
    )
    assert r.code == 1
    assert "did not take the spans" in r.err


async def test_an_eval_exported_keeps_its_samples_within_it(
    tmp_path: Path, receiver: Receiver
) -> None:
    db = tmp_path / "runs.db"
    task = lw.Task(
        dataset=[
            lw.Sample(input="1+1?", target="2", id="a"),
            lw.Sample(input="2+2?", target="4", id="b"),
        ],
        agent=lw.react(),
        scorer=lw.match(),
        name="sums",
    )
    model = lw.get_model("mock", outputs=[call("submit", {"answer": "2"})] * 2)
    [result] = await lw.eval_async(task, model=model, db=db)
    assert result.status == "success"
    r = cli("runs", "export", "--format", "otlp", "--endpoint", receiver.url, cwd=tmp_path, db=db)
    assert r.code == 0, r.err
    [root] = receiver.named("invoke_workflow sums")
    samples = [s for s in receiver.spans if s.parent_span_id == root.span_id]
    assert sorted(s.name for s in samples) == [
        "invoke_agent sums sample a",
        "invoke_agent sums sample b",
    ]
    assert {s.attributes["loopwright.sample.id"] for s in samples} == {"a", "b"}


def test_loopwright_otel_console_prints_spans_on_stderr_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = script(tmp_path / "s.json", ["The answer is 4."])
    monkeypatch.setenv("LOOPWRIGHT_OTEL", "console")
    r = cli("run", "2+2?", "--model", "mock", "-M", outputs, cwd=tmp_path)
    assert r.code == 0, r.err
    assert r.out == "The answer is 4.\n"  # the answer alone on stdout
    assert '"name": "invoke_agent' in r.err
    assert '"gen_ai.operation.name": "chat"' in r.err
