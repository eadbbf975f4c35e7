"""What user code records is checked where it is recorded (events are plain dataclasses,
not validated when made): a wrong value raises at the call, the run goes on, and the run
store is not failed by it."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopwright as lw
from loopwright.transcripts import SpanBegin, current_transcript, run_subtask


async def test_an_event_with_a_wrong_value_is_refused_where_it_is_recorded(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    caught: list[str] = []

    @lw.tool
    async def plan() -> str:
        """Plan."""
        t = current_transcript()
        assert t is not None
        try:
            t.record(SpanBegin(name=("plan", 1)))  # type: ignore[arg-type]
        except TypeError as ex:
            caught.append(str(ex))
        t.record(SpanBegin(name="plan"))
        return "planned"

    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("plan"),
            lw.ModelOutput.for_tool_call("submit", {"answer": "ok"}),
        ],
    )
    state = await lw.run(lw.react(tools=[plan]), "go", model=model, db=db)
    assert caught and "SpanBegin not recorded" in caught[0]
    assert state.completed == "submit" and state.output is not None
    log = lw.load_run(state.run_id, db=db)
    spans = [e for e in log.events() if e.event == "span_begin"]
    assert [s.name for s in spans] == ["plan"]  # type: ignore[union-attr]


async def test_a_subtask_result_that_is_not_json_is_recorded_as_json(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    async def work(x: int) -> int:
        return x * 2

    async with lw.recording(db=db) as rec:
        got = await run_subtask(work, (4,), result=lambda v: (v, "pair"))  # type: ignore[arg-type,return-value]
        assert got == 8
    log = lw.load_run(rec.run_id, db=db)
    (ev,) = [e for e in log.events() if e.event == "subtask"]
    assert ev.result == [8, "pair"]  # type: ignore[union-attr]
    assert log.info.status == "success"


def test_record_outside_a_run_checks_too() -> None:
    t = lw.Transcript()
    with pytest.raises(TypeError):
        t.record(SpanBegin(name=3))  # type: ignore[arg-type]
    assert t.events == []


def test_a_span_or_subtask_named_with_no_string_is_refused_when_made() -> None:
    with pytest.raises(TypeError, match="strings"):
        lw.span(("plan", 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strings"):
        lw.span("plan", type=3)  # type: ignore[arg-type]


async def test_update_checks_the_event_as_record_does() -> None:
    seen: list[object] = []
    t = lw.Transcript(subscribers=[seen.append])
    ev = t.record(lw.InfoEvent(data="x"))
    ev.data = object()  # type: ignore[assignment]
    with pytest.raises(TypeError, match="not recorded"):
        t.update(ev)
    assert seen == [ev]  # told once, when recorded; not of the bad change
