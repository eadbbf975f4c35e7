"""Spans of hostile runs: secrets, text UTF-8 cannot carry, rows a foreign or damaged
run store holds; each checked on what an OTLP encoder (or a receiver on 127.0.0.1)
really gets."""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopwright as lw
import loopwright.otel
from loopwright.model import _redact

from ..cli._cli import cli
from ._receiver import Receiver

TOKEN = "ghp_hostileTokenFromTheEnvironment0123"


def everything(spans: Sequence[ReadableSpan]) -> str:
    """All the text of the spans: names, attributes, events, statuses."""
    return repr(
        [
            (
                s.name,
                dict(s.attributes or {}),
                [(e.name, dict(e.attributes or {})) for e in s.events],
                s.status.description,
            )
            for s in spans
        ]
    )


def call(function: str, arguments: dict[str, Any]) -> lw.ModelOutput:
    return lw.ModelOutput.for_tool_call(function, arguments)


@lw.tool
def environment(name: str) -> str:
    """Read an environment variable.

    Args:
        name: Its name.
    """
    return os.environ.get(name, "")


@lw.tool
def login(name: str) -> str:
    """Log in.

    Args:
        name: The variable holding the token.
    """
    raise RuntimeError(f"the server refused the token {os.environ.get(name)}")


async def test_a_secret_learnt_by_the_run_store_never_reaches_a_span(
    memory: tuple[TracerProvider, InMemorySpanExporter],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run store redacts every secret learnt; the spans of the same run must too:
    a tool that echoes a token, one that raises an error quoting it (its exception
    event is made even without contents), the conversation that quotes it."""
    monkeypatch.setenv("HOSTILE_SERVICE_TOKEN", TOKEN)
    monkeypatch.setattr(_redact, "_env_done", False)
    provider, exporter = memory
    outputs = [
        call("environment", {"name": "HOSTILE_SERVICE_TOKEN"}),
        call("login", {"name": "HOSTILE_SERVICE_TOKEN"}),  # raises: the run fails
    ]
    db = tmp_path / "runs.db"
    for contents in (False, True):
        exporter.clear()
        with (
            loopwright.otel.instrument(tracer_provider=provider, contents=contents),
            pytest.raises(RuntimeError, match="refused"),
        ):
            await lw.run(
                lw.react(tools=[environment, login]),
                "log in",
                model=lw.get_model("mock", outputs=list(outputs)),
                db=db,
            )
        spans = exporter.get_finished_spans()
        [failed] = [s for s in spans if s.name == "execute_tool login"]
        [exception] = [e for e in failed.events if e.name == "exception"]
        assert "the server refused the token" in str(exception.attributes)
        text = everything(spans)
        assert TOKEN not in text
        assert "[redacted]" in text
        if contents:
            [echo] = [s for s in spans if s.name == "execute_tool environment"]
            assert (echo.attributes or {})["gen_ai.tool.call.result"] == "[redacted]"
    assert TOKEN.encode() not in store_bytes(db)


def store_bytes(db: Path) -> bytes:
    """The store and anything SQLite keeps beside it."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


async def test_a_tool_name_utf8_cannot_carry_loses_no_span(
    receiver: Receiver, tmp_path: Path
) -> None:
    """A model may name a tool with a lone surrogate (JSON's ``"\\udc80"``): the span
    named after it must not make the whole batch unencodable, live or exported."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.url)))
    db = tmp_path / "runs.db"
    outputs = [call("look\udc80up", {"q": "x\ud800y"}), call("submit", {"answer": "ok"})]
    with loopwright.otel.instrument(tracer_provider=provider, contents=True):
        state = await lw.run(
            lw.react(name="hostile"), "go", model=lw.get_model("mock", outputs=outputs), db=db
        )
    assert provider.force_flush(10_000)
    provider.shutdown()
    [run] = receiver.named("invoke_agent hostile")
    assert run.attributes["loopwright.run.id"] == state.run_id
    [tool] = receiver.named("execute_tool look\ufffdup")
    assert tool.attributes["gen_ai.tool.name"] == "look\ufffdup"
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"q": "x\ufffdy"}'
    # the same run read back from the store and sent by the command line
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
    assert receiver.named("invoke_agent hostile")
    assert receiver.named("execute_tool look\ufffdup")


@lw.tool
def chatty(x: int) -> int:
    """Log and note things while working.

    Args:
        x: Anything.
    """
    logging.getLogger("chatty").warning("working on %s", x)
    lw.transcript().info({"seen": x}, source="chatty")
    return x


async def test_what_happened_within_a_tool_call_is_exported_as_it_was_traced(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    """A recorded run's events within a tool call (log records, info) come after the
    call's own event: exported, they must land on the call's span as they do live."""
    provider, exporter = memory
    db = tmp_path / "runs.db"
    outputs = [call("chatty", {"x": 7}), call("submit", {"answer": "7"})]
    with loopwright.otel.instrument(tracer_provider=provider):
        state = await lw.run(
            lw.react(tools=[chatty]), "go", model=lw.get_model("mock", outputs=outputs), db=db
        )
    [live] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool chatty"]
    live_events = sorted(e.name for e in live.events)
    assert live_events == ["loopwright.info", "loopwright.log"]
    exporter.clear()
    loopwright.otel.export_spans(state.run_id, db=db, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    [exported] = [s for s in spans if s.name == "execute_tool chatty"]
    assert sorted(e.name for e in exported.events) == live_events
    [step] = [s for s in spans if exported.parent and s.context.span_id == exported.parent.span_id]
    assert step.name == "step 1"


def _recorded(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "runs.db"
    outputs = [call("chatty", {"x": 1}), call("submit", {"answer": "1"})]
    state = lw.run_sync(
        lw.react(tools=[chatty], name="damaged"),
        "go",
        model=lw.get_model("mock", outputs=outputs),
        db=db,
    )
    return db, state.run_id


def _edit(db: Path, kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the ``kind`` event rows of the store as a foreign writer would."""
    conn = sqlite3.connect(db)
    try:
        for seq, data in conn.execute("SELECT seq, data FROM events WHERE type = ?", (kind,)):
            record = json.loads(data)
            change(record)
            conn.execute("UPDATE events SET data = ? WHERE seq = ?", (json.dumps(record), seq))
        conn.commit()
    finally:
        conn.close()


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        record[field] = value

    return change


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("duration", math.inf),
        ("duration", math.nan),
        ("duration", 1e300),
        ("duration", -1e15),
        ("timestamp", "1900-01-01T00:00:00Z"),
        ("timestamp", "9999-12-31T00:00:00Z"),
    ],
)
def test_a_row_with_a_time_out_of_range_is_still_exported(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path, field: str, value: Any
) -> None:
    """A tool event row whose duration is not finite (JSON's ``Infinity``, ``NaN``) or
    absurd, or whose time is before 1970 or past what OTLP holds: its span is sent
    with a time OTLP can carry, and the rest of the run with it."""
    provider, exporter = memory
    db, run_id = _recorded(tmp_path)
    _edit(db, "tool", _set(field, value))
    loopwright.otel.export_spans(run_id, db=db, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    assert len(encode_spans(spans).SerializeToString()) > 0
    names = {s.name for s in spans}
    assert {"invoke_agent damaged", "execute_tool chatty", "execute_tool submit"} <= names
    for s in spans:
        assert s.start_time is not None and s.end_time is not None
        assert 0 <= s.start_time <= s.end_time < 2**64


@lw.tool
def noop(i: int) -> int:
    """Nothing.

    Args:
        i: Anything.
    """
    return i


def test_a_long_run_is_exported_in_requests_a_collector_takes(
    receiver: Receiver, tmp_path: Path
) -> None:
    """Collectors refuse requests over a few megabytes: a long run's spans go in
    batches (at most 512 a request, the SDK's batch size), not all in one request."""
    db = tmp_path / "runs.db"
    steps = 250  # a step, its chat and its tool call each: 751 spans with the run's
    outputs = [call("noop", {"i": i}) for i in range(steps - 1)]
    outputs.append(call("submit", {"answer": "done"}))
    state = lw.run_sync(
        lw.react(tools=[noop], name="long", max_steps=steps),
        "go",
        model=lw.get_model("mock", outputs=outputs),
        db=db,
    )
    r = cli(
        "runs", "export", state.run_id, "--format", "otlp", "--endpoint", receiver.url,
        cwd=tmp_path, db=db,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert f"sent {3 * steps + 1} spans" in r.err
    assert len(receiver.spans) == 3 * steps + 1
    assert len(receiver.requests) >= 2
    assert max(receiver.requests) <= 512


async def test_a_reply_of_many_long_parts_is_one_bounded_content_value(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    """``max_content`` bounds each content value: a reply with reasoning, text and 64
    tool calls of long arguments (what a reply may hold) was one part per bound, 66
    times the bound, in the output messages and again in the next call's input."""
    provider, exporter = memory
    long = "y" * 5000
    calls = [
        lw.ToolCall(id=f"call-{i}", function="noop", arguments={"i": 1, "pad": long})
        for i in range(64)
    ]
    reply = lw.ModelOutput(
        message=lw.AssistantMessage(content=long, reasoning=long, tool_calls=calls),
        stop_reason="tool_calls",
    )
    outputs = [reply, call("submit", {"answer": "done"})]
    with loopwright.otel.instrument(tracer_provider=provider, contents=True, max_content=1000):
        await lw.run(
            lw.react(tools=[noop]), "go", model=lw.get_model("mock", outputs=outputs), db=False
        )
    first, second = sorted(
        (s for s in exporter.get_finished_spans() if s.name == "chat mock"),
        key=lambda s: s.start_time or 0,
    )
    output = str((first.attributes or {})["gen_ai.output.messages"])
    assert len(output) < 1500
    [message] = json.loads(output)
    assert message["parts"][0] == {
        "type": "reasoning",
        "content": "y" * 1000 + "...[4000 characters cut]",
    }
    assert "64 parts" in output  # what was left out is said
    inputs = str((second.attributes or {})["gen_ai.input.messages"])
    assert len(inputs) < 2 * 1500


async def test_a_long_conversation_traced_with_contents_costs_each_step_its_own_work(
    memory: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gen_ai.input.messages`` shows the newest messages that fit: building every
    call's whole input to find them made a long run with contents quadratic (16,000
    steps: 10 ms a step against 0.5 without contents). Counted here: the messages
    the tracing reads, whole inputs or one by one, stay within a bound per step."""
    read = [0]
    whole, one = lw.Transcript.model_input, lw.Transcript.message

    def model_input(self: lw.Transcript, event: Any) -> list[lw.ChatMessage]:
        messages = whole(self, event)
        read[0] += len(messages)
        return messages

    def message(self: lw.Transcript, id: str) -> lw.ChatMessage | None:
        read[0] += 1
        return one(self, id)

    monkeypatch.setattr(lw.Transcript, "model_input", model_input)
    monkeypatch.setattr(lw.Transcript, "message", message)
    provider, exporter = memory
    steps = 300
    outputs = [call("noop", {"i": i}) for i in range(steps - 1)]
    outputs.append(call("submit", {"answer": "done"}))
    with loopwright.otel.instrument(tracer_provider=provider, contents=True, max_content=1000):
        await lw.run(
            lw.react(tools=[noop], max_steps=steps),
            "go",
            model=lw.get_model("mock", outputs=outputs),
            db=False,
        )
    chats = [s for s in exporter.get_finished_spans() if s.name == "chat mock"]
    assert len(chats) == steps
    last = max(chats, key=lambda s: s.start_time or 0).attributes or {}
    shown = json.loads(str(last["gen_ai.input.messages"]))
    assert shown and shown[-1]["role"] == "tool"  # the newest message last
    # the user's message, then a reply and its tool result a step before the last
    assert last["loopwright.input.messages_omitted"] == 2 * steps - 1 - len(shown)
    assert read[0] <= 30 * steps  # (the whole inputs: 2 * steps * steps / 2)


def test_a_run_that_never_ended_ends_after_what_it_did(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    """A run still going, or whose process died, has no end in the store: its span
    ended where it began, before every span within it."""
    provider, exporter = memory
    db, run_id = _recorded(tmp_path)
    conn = sqlite3.connect(db)
    try:  # as a killed process leaves it (no process has pid 0)
        conn.execute("UPDATE runs SET status = 'running', finished = NULL, pid = 0")
        conn.commit()
    finally:
        conn.close()
    loopwright.otel.export_spans(run_id, db=db, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    [run] = [s for s in spans if s.name == "invoke_agent damaged"]
    assert run.end_time is not None
    assert all(run.end_time >= (s.end_time or 0) for s in spans)
    assert run.end_time > (run.start_time or 0)


def test_what_happened_within_a_call_beside_a_longer_one_stays_on_its_span(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    """Two calls of one step run side by side, the first a long one. A recorded call
    ends once the events read reach its end (less SETTLE_NS), but the time the export
    had reached counted the long call's end: read, it ended the short call beside it
    before the log record and info within it were read (they lost their span)."""
    provider, exporter = memory
    db = tmp_path / "runs.db"
    both = lw.ModelOutput(
        message=lw.AssistantMessage(
            tool_calls=[
                lw.ToolCall(function="noop", arguments={"i": 1}),
                lw.ToolCall(function="chatty", arguments={"x": 2}),
            ]
        ),
        stop_reason="tool_calls",
    )
    state = lw.run_sync(
        lw.react(tools=[noop, chatty], name="side by side"),
        "go",
        model=lw.get_model("mock", outputs=[both, call("submit", {"answer": "2"})]),
        db=db,
    )

    def long(record: dict[str, Any]) -> None:
        if record["call"]["function"] == "noop":
            record["duration"] = 100.0  # (as if it had taken that long)

    _edit(db, "tool", long)
    loopwright.otel.export_spans(state.run_id, db=db, tracer_provider=provider)
    [chatty_span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool chatty"]
    assert sorted(e.name for e in chatty_span.events) == ["loopwright.info", "loopwright.log"]
