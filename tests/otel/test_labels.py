"""Names and ids in spans come from datasets (a sample's id), tasks, models and MCP
servers (a tool's name): of any length, holding any character. In a span's name or an
identifying attribute each is one line, bounded, its control, bidi and invisible
characters escaped (as ``_terminal.one_line`` shows them), whether the spans are made
live or from the run store."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopwright as lw
import loopwright.otel
from loopwright.otel._attributes import LABELS, MAX_LABEL, label

# what acts on a terminal or a viewer, or shows as nothing: C0 (\n and \t too, in a
# name), DEL, C1, the bidi controls and the invisible characters tested here
ACTING = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
HOSTILE = "\x1b[31mred\x1b[0m \u202eevil\u202c\r\nforged line\x00\u200b\u2066"
HUGE = 1_000_000


@pytest.fixture
def memory() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def check_labels(spans: Sequence[ReadableSpan]) -> None:
    """Every span's name and every name or id attribute: bounded and inert."""
    assert spans
    for s in spans:
        assert len(s.name) <= 3 * MAX_LABEL, s.name[:100]  # (two labels and words)
        assert not ACTING.search(s.name), repr(s.name[:300])
        for key, value in (s.attributes or {}).items():
            if key in LABELS:
                assert isinstance(value, str)
                assert len(value) <= MAX_LABEL + 40, key
                assert not ACTING.search(value), (key, value[:300])


def test_label_escapes_bounds_and_says_so() -> None:
    assert label("plain name") == "plain name"
    shown = label(HOSTILE)
    assert not ACTING.search(shown)
    assert "\\x1b[31mred" in shown and "\\u202e" in shown and "\\r\\n" in shown
    huge = label(HOSTILE + "x" * HUGE)
    assert len(huge) <= MAX_LABEL + 40
    assert huge.startswith("\\x1b[31mred")
    assert huge.endswith(f"...[{len(HOSTILE) + HUGE:,} characters, cut]")
    assert label("lone \udc80") == "lone \ufffd"  # as the OTLP encoder can carry it


async def test_an_eval_with_a_huge_hostile_sample_id_and_name(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    provider, exporter = memory
    sample_id = HOSTILE + "i" * HUGE
    task_name = "sums" + HOSTILE + "n" * 5000
    task = lw.Task(
        dataset=[lw.Sample(input="1+1?", target="2", id=sample_id)],
        agent=lw.react(),
        scorer=lw.match(),
        name=task_name,
    )
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("submit", {"answer": "2"})])
    db = tmp_path / "runs.db"
    with loopwright.otel.instrument(tracer_provider=provider):
        [result] = await lw.eval_async(task, model=model, db=db)
    assert result.status == "success"
    check_labels(exporter.get_finished_spans())
    # read back from the run store: the sample's id is in its span's name
    exporter.clear()
    loopwright.otel.export_spans(result.run_id, db=db, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    check_labels(spans)
    [sample] = [s for s in spans if (s.attributes or {}).get("loopwright.eval.sample")]
    shown_id = (sample.attributes or {})["loopwright.sample.id"]
    assert shown_id.startswith("\\x1b[31mred\\x1b[0m \\u202eevil")
    assert shown_id.endswith(f"[{len(sample_id):,} characters, cut]")
    assert " sample \\x1b[31mred" in sample.name
    assert sample.name.endswith("characters, cut]")


@lw.tool
def spanning(x: int) -> int:
    """Open a span with a hostile name.

    Args:
        x: A number.
    """
    with lw.span(HOSTILE + "s" * HUGE, type=HOSTILE):
        return x


async def test_hostile_tool_and_span_names_from_a_model(
    memory: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
) -> None:
    """A model names a tool (the name an MCP server gives is shown the same way) and
    its call's id; a tool names a span: each hostile, one of them huge."""
    provider, exporter = memory
    outputs = [
        lw.ModelOutput.for_tool_call("spanning", {"x": 1}),
        lw.ModelOutput.for_tool_call("no_such" + HOSTILE + "t" * HUGE, {}),
        lw.ModelOutput.for_tool_call("submit", {"answer": "ok"}),
    ]
    db = tmp_path / "runs.db"
    with loopwright.otel.instrument(tracer_provider=provider, contents=True):
        state = await lw.run(
            lw.react(tools=[spanning], name=HOSTILE),
            "go",
            model=lw.get_model("mock", outputs=outputs),
            db=db,
        )
    live = exporter.get_finished_spans()
    exporter.clear()
    loopwright.otel.export_spans(state.run_id, db=db, tracer_provider=provider, contents=True)
    for spans in (live, exporter.get_finished_spans()):
        check_labels(spans)
        [tool] = [s for s in spans if s.name.startswith("execute_tool no_such")]
        assert tool.name.startswith("execute_tool no_such\\x1b[31mred")
        assert tool.name.endswith("characters, cut]")
        assert (tool.attributes or {})["gen_ai.tool.name"].startswith("no_such\\x1b")
        [block] = [s for s in spans if s.name.startswith("\\x1b[31mred")]
        assert (block.attributes or {})["loopwright.span.type"].startswith("\\x1b[31mred")
        [run] = [s for s in spans if s.name.startswith("invoke_agent ")]
        assert run.name == "invoke_agent " + label(HOSTILE)
