"""Where an interrupted run (or eval sample) can go on from: its resume point.

A run that ended without finishing (its process killed, crashed, cancelled) left in the
run store everything it did until then. :func:`resume_point` reads, in one pass over the
run's (or sample's) events (SQLite reads the counts out of each event's JSON; only the
last step's events are read whole):

- its last step: the last top-level model call of the agent's loop that answered (its
  full input, its output, the tools it was offered; not a history policy's summary nor a
  hook's call: the calls marked ``step``, or in a part of the run recorded before the
  mark, any top-level call) and the tool calls answering it — those whose
  result was recorded (``results``) and those that were in flight or failed when the run
  stopped (``in_flight``: they run again);
- its store (rebuilt from its ``StoreEvent`` patches), its usage and cost;
- what each kind of limit consumed (:class:`Consumed`): steps (model calls made, nested
  ones included, as a step limit counts them), tokens, dollars, wall-clock and working
  seconds of every part of the run so far (a part begins when the run opened or was
  resumed, and ends at its last recorded event);
- how many times it was resumed already, and where its next event goes (``next_seq``).

The runtime (``runtime/_resume.py``) decides what to do with it; this module only reads.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from ..model import (
    ChatMessage,
    ModelOutput,
    ToolCall,
    ToolInfo,
    ToolMessage,
    Usage,
    usage_from_json,
)
from ..transcripts import ModelEvent, ToolEvent
from ._db import RunStoreError, reading
from ._reader import RunLog, load_run
from ._serialize import load_message
from ._step_scan import StepScan

__all__ = [
    "FINISHED",
    "RESUME_SOURCE",
    "Consumed",
    "LastStep",
    "ResumePoint",
    "carried",
    "resume_mark",
    "resume_point",
]

RESUME_SOURCE = "resume"
"""The ``source`` of the ``InfoEvent`` that marks where a run was resumed."""

FINISHED = frozenset({"success", "limit", "stopped"})
"""Statuses of a run (or sample) that finished: it cannot be resumed. ``interrupted``
(its process died), ``running`` (elsewhere), ``cancelled`` and ``error`` can."""


@dataclass(frozen=True)
class Consumed:
    """What the run used so far, as its limits count it."""

    steps: int = 0
    """Model calls made (nested runs' included), answered or failed; not those that were
    in flight when the run stopped (they are made again)."""
    tokens: int = 0
    cost: float = 0.0
    """Dollars of the calls with a known price."""
    priced_calls: int = 0
    unpriced_calls: int = 0
    time: float = 0.0
    """Wall-clock seconds of the run's parts so far."""
    working: float = 0.0
    """``time`` less the model calls' waits (retry backoff, connection queue)."""
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class LastStep:
    """The last top-level model call that answered, and what became of its tool calls."""

    event_id: str
    messages: list[ChatMessage]
    """The call's full input: the conversation to continue from."""
    tools: list[ToolInfo]
    output: ModelOutput
    results: dict[str, ToolMessage]
    """The recorded result of each tool call that finished, by call id."""
    in_flight: list[ToolCall]
    """The calls with no recorded result (running, or failed by an exception, when the
    run stopped): the resumed run makes them again."""
    usage: Usage | None = None
    cost: float | None = None
    step: bool = False
    """The call was marked as the agent loop's step (its ``ModelEvent.step``): the
    resumed run answers the loop's step only, not another call offering its tools."""


@dataclass(frozen=True)
class ResumePoint:
    """An unfinished run (or sample) as :func:`resume_point` read it."""

    run_id: str
    sample: str
    """The sample's key (``""``: the run itself)."""
    name: str | None
    status: str
    input: Any
    metadata: dict[str, Any]
    store: dict[str, Any]
    store_id: str | None
    last: LastStep | None
    """``None``: no model call answered before the run stopped (it starts over)."""
    consumed: Consumed
    resumes: int
    """Times it was resumed before."""
    next_seq: int
    """The sequence number of the run's next event."""
    next_message_seq: int = 0
    """The sequence number of the run's next message (of its own, outside samples)."""
    samples: int = 0
    """The run's samples (an eval's run: its samples go on in ``lw.eval(resume=)``)."""
    holder: tuple[str, str | None, int | None] = ("running", None, None)
    """The status, host and pid its row had: reopening it checks they are still those
    (two resumes of the run at once: one of them takes it)."""

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


CARRIED_KEY = "_resume"
"""The metadata key of an eval sample continued in a new run: where it came from and
what its earlier parts consumed (a sample's events are in the run that made them)."""


def carried(point: ResumePoint) -> dict[str, Any]:
    """The metadata of a sample that continues ``point`` in another run."""
    used = point.consumed
    return {
        "continued_from": point.run_id,
        CARRIED_KEY: {
            "run": point.run_id,
            "sample": point.sample,
            "resumes": point.resumes + 1,
            # (the counts a continued sample adds to its own: _before; not the usage)
            "consumed": {k: v for k, v in vars(used).items() if k != "usage"},
        },
    }


def _before(metadata: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """What a continued sample's earlier runs consumed (see :func:`carried`)."""
    mark = metadata.get(CARRIED_KEY)
    if not isinstance(mark, dict) or not isinstance(mark.get("consumed"), dict):
        return 0, {}
    consumed = mark["consumed"].items()  # (numbers only: JSON may say Infinity)
    used = {k: v for k, v in consumed if isinstance(v, (int, float)) and math.isfinite(v)}
    resumes = mark.get("resumes")
    return (resumes if isinstance(resumes, int) else 0), used


# each event's place, kind and time, and a model event's counts, read by SQLite without
# reading the event (json_extract): only the last step's events are read whole
_SCAN = (
    "SELECT id, span_id, type, timestamp, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.pending') "
    "WHEN 'info' THEN json_extract(data, '$.source') END, "
    "CASE type WHEN 'model' THEN json_type(data, '$.output') "
    "WHEN 'info' THEN json_type(data, '$.data.resume') END, "
    "CASE type WHEN 'model' THEN json_type(data, '$.error') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.usage') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.cost') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.wait_time') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.input_base') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.input_base_count') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.input') END, "
    "CASE type WHEN 'model' THEN json_extract(data, '$.step') "
    "WHEN 'info' THEN json_extract(data, '$.data.step') END "
    "FROM events WHERE run_id = ? AND sample = ? ORDER BY seq"
)
# a model event's input: (the event its input extends, how many of that one's it keeps,
# its new message ids as JSON)
_Input = tuple[str | None, int, str]


def _input_ids(inputs: dict[str, _Input], event_id: str) -> list[str] | None:
    """A model event's full input ids, from the chain of inputs it extends (as
    ``transcripts._resolve_input``); ``None`` when a link is missing.

    Raises:
        RunStoreError: The chain loops (a damaged or crafted run store).
    """
    chain, seen = [event_id], {event_id}
    while (base := inputs[chain[-1]][0]) is not None:
        if base not in inputs:
            return None
        if base in seen:
            raise RunStoreError(
                f"model event {event_id!r}: the chain of inputs it extends loops back to "
                f"event {base!r} (the run store is damaged)"
            )
        seen.add(base)
        chain.append(base)
    ids = _listed(inputs[chain.pop()][2])
    for link in reversed(chain):
        _, count, new = inputs[link]
        del ids[count:]
        ids.extend(_listed(new))
    return ids


def _listed(value: Any) -> list[str]:
    """A model event's new input ids as SQLite read them (a damaged row's: anything)."""
    ids = json.loads(value) if isinstance(value, str) else value or []
    if not isinstance(ids, list):
        raise ValueError(f"a model event's input is not a list: {str(value)[:40]!r}")
    return ids


def _messages(log: RunLog, inputs: dict[str, _Input], last: ModelEvent) -> list[ChatMessage]:
    """The last step's input, its messages read in one query."""
    ids = _input_ids(inputs, last.id)
    if ids is None:
        return log.model_input(last)
    rows = log._all(
        "SELECT id, data FROM messages WHERE run_id = ? AND id IN (SELECT value FROM json_each(?))",
        (log.run_id, json.dumps(ids)),
    )
    loaded: dict[str, ChatMessage] = {}
    for id, data in rows:
        with contextlib.suppress(ValueError):  # (log.message says what is damaged)
            loaded[id] = load_message(data)
    return [loaded[i] if i in loaded else log.message(i) for i in ids]


def _tool_event(log: RunLog, id: str) -> ToolEvent | None:
    row = log._one("SELECT data FROM events WHERE run_id = ? AND id = ?", (log.run_id, id))
    event = log._event(row[0]) if row is not None else None
    return event if isinstance(event, ToolEvent) else None


def _seconds(a: datetime, b: datetime) -> float:
    return max(0.0, (b - a).total_seconds())


def resume_point(
    run: str, db: str | os.PathLike[str] | None = None, sample: str | None = None
) -> ResumePoint:
    """Read where run ``run`` (an id or a unique id prefix; with ``sample``, that sample
    of it: a key or id) stopped.

    Raises:
        RunStoreError: No such run or sample (or store).
    """
    with load_run(run, db) as log, reading(log._where):  # (a damaged value: one error)
        info = log.info
        key = log._sample(sample) if sample else ""
        status, created, input, metadata = info.status, info.created, info.input, info.metadata
        store_id = info.store_id
        if key:
            found = [s for s in log.samples if s.key == key]
            if not found:
                raise RunStoreError(f"run {log.run_id!r} has no sample {sample!r}")
            s = found[0]
            status, created, input, metadata = s.status, s.created, s.input, s.metadata
            store_id = s.store_id
        steps = tokens = unpriced = priced = 0
        cost = time_used = waits = 0.0
        usage = Usage()
        resumes = 0
        part_start, part_end = created, created
        spans: set[str | None] = {None}
        inputs: dict[str, _Input] = {}
        scan = StepScan()
        for row in log._stream(_SCAN, (log.run_id, key)):
            id, span_id, kind, stamp, flag, output, error, used, dollars, waited = row[:10]
            top = span_id in spans
            if top and kind == "span_begin":
                spans.add(id)
            when = datetime.fromisoformat(stamp)
            when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)  # (by hand)
            # a part's resume mark (its data an object, ``resume_mark``; not the note
            # that a call in flight runs again, of the same source)
            if kind == "info" and flag == RESUME_SOURCE and top and output == "integer":
                time_used += _seconds(part_start, part_end)
                part_start = part_end = when
                resumes += 1
                scan.part_ended()
                scan.continued = bool(row[13])  # (it answered a marked step from the record)
                continue
            part_end = max(part_end, when)
            if kind == "model":
                inputs[id] = (row[10], int(row[11] or 0), row[12])
            if kind == "model" and not flag:  # (flag: pending)
                steps += 1
                waits += float(waited or 0.0)
                if used is not None:
                    step_usage = usage_from_json(used)
                    usage = usage + step_usage
                    tokens += step_usage.total_tokens
                answered = output == "object"
                if dollars is not None:
                    cost, priced = cost + float(dollars), priced + 1
                elif answered:
                    unpriced += 1
            if kind == "model" and top:
                ok = not flag and output == "object" and error in (None, "null")
                scan.model(id, marked=bool(row[13]), answered=ok)
            elif kind == "tool" and top:
                scan.tool(id)
        scan.part_ended()
        last = log._model_event(scan.id) if scan.id is not None else None
        tool_events = [ev for ev in map(partial(_tool_event, log), scan.tools) if ev is not None]
        time_used += _seconds(part_start, part_end)
        before, earlier = _before(metadata)  # (a sample continued from another run)
        resumes = max(resumes, before)
        step: LastStep | None = None
        if last is not None and last.output is not None:
            results = {
                ev.call.id: ev.result
                for ev in tool_events
                if not ev.pending and ev.failure is None and ev.result is not None
            }
            calls = last.output.message.tool_calls
            step = LastStep(
                event_id=last.id,
                messages=_messages(log, inputs, last),
                tools=list(last.tools),
                output=last.output,
                results=results,
                in_flight=[c for c in calls if c.id not in results],
                usage=last.usage,
                cost=last.cost,
                step=bool(last.step),
            )
        with_seq = log._one("SELECT MAX(seq) FROM events WHERE run_id = ?", (log.run_id,))
        next_seq = (with_seq[0] + 1) if with_seq and with_seq[0] is not None else 0
        with_mseq = log._one(
            "SELECT MAX(seq) FROM messages WHERE run_id = ? AND sample = ?", (log.run_id, key)
        )
        next_mseq = (with_mseq[0] + 1) if with_mseq and with_mseq[0] is not None else 0
        return ResumePoint(
            run_id=log.run_id,
            sample=key,
            name=info.name,
            status=status,
            input=input,
            metadata=dict(metadata),
            store=log.store(key or None),
            store_id=store_id,
            last=step,
            consumed=Consumed(
                steps=steps + int(earlier.get("steps", 0)),
                tokens=tokens + int(earlier.get("tokens", 0)),
                cost=cost + float(earlier.get("cost", 0.0)),
                priced_calls=priced + int(earlier.get("priced_calls", 0)),
                unpriced_calls=unpriced + int(earlier.get("unpriced_calls", 0)),
                time=time_used + float(earlier.get("time", 0.0)),
                working=max(0.0, time_used - waits) + float(earlier.get("working", 0.0)),
                usage=usage,
            ),
            resumes=resumes,
            next_seq=next_seq,
            next_message_seq=next_mseq,
            samples=info.samples,
            holder=(
                "running" if info.status == "interrupted" else info.status,
                info.host,
                info.pid,
            ),
        )


def resume_mark(point: ResumePoint) -> dict[str, Any]:
    """The data of the ``InfoEvent`` (source ``resume``) that opens a resumed part of a
    run: which part it is, the step it goes on from, the calls answered from the record
    and those run again, and what the run had consumed."""
    last, used = point.last, point.consumed
    answered = (
        []
        if last is None
        else [
            {"id": c.id, "function": c.function}
            for c in last.output.message.tool_calls
            if c.id in last.results
        ]
    )
    again = [] if last is None else [{"id": c.id, "function": c.function} for c in last.in_flight]
    text = f"Resumed ({point.status}, resume {point.resumes + 1})"
    text += f" after {used.steps} model calls" if last is not None else ", from the start"
    if again:
        text += "; in flight when it stopped, run again: " + ", ".join(
            f"{c['function']} ({c['id']})" for c in again
        )
    return {
        "message": text[:2000],
        "resume": point.resumes + 1,
        "was": point.status,
        "from_model_event": last.event_id if last is not None else None,
        # the step it goes on from is the agent loop's (marked): the part's unmarked
        # calls are not steps (``_step_scan.py``)
        "step": last.step if last is not None else None,
        "answered_from_record": answered[:100],
        "run_again": again[:100],
        "consumed": {
            "steps": used.steps,
            "tokens": used.tokens,
            "cost": used.cost,
            "time": round(used.time, 3),
            "working": round(used.working, 3),
        },
    }
