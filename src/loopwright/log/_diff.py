"""``diff_runs``: where two recorded runs (or two samples) part ways, step by step.

A step is one top-level model call and the tool calls answering it. Two runs are
compared step by step, in order: the first step where what was asked differs (the tools
offered, the generation config), or what the model wrote differs (its text, the tool
calls it made), or what the tools returned differs, is the divergence. The totals
(steps, tokens, time) and the recorded versions of the agent and its tools are compared
beside it. Everything is read from the run store; nothing is run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, Literal

from .._errors import ConfigurationError
from ..transcripts import ModelEvent, SpanBegin, ToolEvent
from ._db import reading
from ._info import RUN_COLUMNS, RunInfo
from ._reader import RunLog, load_run

__all__ = ["Divergence", "RunDiff", "Step", "diff_runs"]

DivergenceKind = Literal["tools", "config", "text", "tool_calls", "tool_results", "length"]

_SHOWN = 2000  # characters of a differing value kept in a Divergence


@dataclass(frozen=True)
class Step:
    """One step of a run as compared: what was asked and what came back."""

    index: int
    tools: list[str]
    config: dict[str, Any]
    text: str
    tool_calls: list[str]  # each as function({"argument": ...}), keys sorted
    tool_results: list[str]  # each call's result text, or "error: ..." / "failed: ..."
    tokens: int


@dataclass(frozen=True)
class Divergence:
    """The first difference: at which step (0-based), in what, and both sides."""

    step: int
    kind: DivergenceKind
    a: str
    b: str

    def describe(self) -> str:
        what = {
            "tools": "the tools offered",
            "config": "the generation config",
            "text": "the model's text",
            "tool_calls": "the tool calls",
            "tool_results": "the tool results",
            "length": "the number of steps",
        }[self.kind]
        return f"step {self.step + 1}: {what} differ"


@dataclass(frozen=True)
class RunDiff:
    """Two runs compared. ``divergence`` is ``None`` when every step is the same."""

    a: str
    b: str
    steps_a: int
    steps_b: int
    divergence: Divergence | None
    tokens_a: int
    tokens_b: int
    seconds_a: float | None
    seconds_b: float | None
    versions: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Recorded versions that differ: name -> (in a, in b)."""

    @property
    def same(self) -> bool:
        return self.divergence is None and not self.versions


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN // 2] + " … " + text[-_SHOWN // 2 :]


def _result_text(ev: ToolEvent) -> str:
    if ev.failure is not None:
        return f"failed: {ev.failure}"
    if ev.error is not None:
        return f"error: {ev.error.message}"
    return ev.result.text if ev.result is not None else ""


def steps(log: RunLog, sample: str | None = None) -> Iterator[Step]:
    """The top-level steps of a run (or of one of its samples), in order, as they are
    read: each event's messages read for it and not kept, so that what a diff holds is
    the step it compares, not every message of two runs."""
    count = 0
    current: dict[str, Any] | None = None
    spans: set[str | None] = {None}
    for ev in log._events(log._sample(sample), keep=False):
        if ev.span_id not in spans:
            continue  # inside a tool call, a subtask or a span's own agents
        if isinstance(ev, SpanBegin):
            spans.add(ev.id)
        elif isinstance(ev, ModelEvent) and ev.output is not None:
            if current is not None:
                yield Step(**current)
                count += 1
            message = ev.output.message
            current = {
                "index": count,
                "tools": sorted(t.name for t in ev.tools),
                "config": ev.config.model_dump(exclude_none=True),
                "text": message.text,
                "tool_calls": [
                    f"{c.function}({json.dumps(c.arguments, sort_keys=True)})"
                    for c in message.tool_calls or ()
                ],
                "tool_results": [],
                "tokens": ev.usage.total_tokens if ev.usage is not None else 0,
            }
        elif isinstance(ev, ToolEvent) and current is not None and not ev.pending:
            current["tool_results"].append(_result_text(ev))
    if current is not None:
        yield Step(**current)


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return json.dumps(value, sort_keys=True)


def _step_divergence(x: Step, y: Step) -> Divergence | None:
    for kind in ("tools", "config", "text", "tool_calls", "tool_results"):
        left, right = getattr(x, kind), getattr(y, kind)
        if left != right:
            return Divergence(x.index, kind, _cut(_shown(left)), _cut(_shown(right)))
    return None


@dataclass
class _Compared:
    divergence: Divergence | None = None
    steps_a: int = 0
    steps_b: int = 0
    tokens_a: int = 0
    tokens_b: int = 0


def _compare(a: Iterator[Step], b: Iterator[Step]) -> _Compared:
    """Two runs' steps side by side, as they are read: the first divergence and the
    totals."""
    c = _Compared()
    for x, y in zip_longest(a, b):
        if x is not None:
            c.steps_a, c.tokens_a = c.steps_a + 1, c.tokens_a + x.tokens
        if y is not None:
            c.steps_b, c.tokens_b = c.steps_b + 1, c.tokens_b + y.tokens
        if c.divergence is None and x is not None and y is not None:
            c.divergence = _step_divergence(x, y)
    if c.divergence is None and c.steps_a != c.steps_b:
        shorter = min(c.steps_a, c.steps_b)
        c.divergence = Divergence(shorter, "length", f"{c.steps_a} steps", f"{c.steps_b} steps")
    return c


_SHORT = RUN_COLUMNS.replace("messages", "NULL")  # (a run's row but its conversation)


def _info(log: RunLog) -> RunInfo:
    """The run's row (as ``log.info``) without its final conversation: a long run's
    message ids, which a diff does not show."""
    row = log._one(f"SELECT {_SHORT} FROM runs WHERE id = ?", (log.run_id,))
    if row is None:
        return log.info  # (which says the run is gone)
    count = log._one("SELECT COUNT(*) FROM samples WHERE run_id = ?", (log.run_id,))[0]
    with reading(log._where):
        return RunInfo._from_row(row, count)


def _one_sample(info: RunInfo, sample: str | None) -> None:
    """An eval's steps are its samples': without one named, there is nothing to compare."""
    count = info.samples if sample is None else 0
    if count:
        raise ConfigurationError(
            f"run {info.id!r} is an eval of {count} sample{'s' if count > 1 else ''}, "
            "whose steps are its samples': say which sample to compare (sample=ID or key; "
            "--sample on the command line)"
        )


def _versions(info: RunInfo) -> dict[str, str]:
    recorded = info.metadata.get("versions")
    return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}


def _seconds(log: RunLog, info: RunInfo, sample: str | None) -> float | None:
    if not sample:
        return None if info.finished is None else (info.finished - info.created).total_seconds()
    row = log._one(  # (not log.samples: every sample's row, conversations and all)
        "SELECT created, finished FROM samples WHERE run_id = ? AND key = ?",
        (log.run_id, log._sample(sample)),
    )
    numbers = row is not None and all(isinstance(t, (int, float)) for t in row)
    return float(row[1]) - float(row[0]) if numbers else None


def diff_runs(
    a: str,
    b: str,
    *,
    db: str | os.PathLike[str] | None = None,
    db_b: str | os.PathLike[str] | None = None,
    sample: str | None = None,
    sample_b: str | None = None,
) -> RunDiff:
    """Compare run ``a`` with run ``b`` (ids or unique id prefixes) step by step.

    ``db_b`` reads ``b`` from another run store (default: the same as ``a``).
    ``sample`` compares one sample of two evals (a sample id or key; ``sample_b``
    defaults to the same id in ``b``). The steps are compared as they are read, side by
    side, not all held first.

    Raises:
        ConfigurationError: A run is an eval and no sample of it is named.
        RunStoreError: No such run or sample, or a row that cannot be read.
    """
    path_b: str | os.PathLike[str] | None = db_b if db_b is not None else db
    with load_run(a, db=db) as left, load_run(b, db=path_b) as right:
        sb = sample_b if sample_b is not None else sample
        info_a, info_b = _info(left), _info(right)
        _one_sample(info_a, sample)
        _one_sample(info_b, sb)
        compared = _compare(steps(left, sample), steps(right, sb))
        va, vb = _versions(info_a), _versions(info_b)
        versions = {
            name: (va.get(name), vb.get(name))
            for name in sorted(set(va) | set(vb))
            if va.get(name) != vb.get(name)
        }
        return RunDiff(
            a=left.run_id,
            b=right.run_id,
            steps_a=compared.steps_a,
            steps_b=compared.steps_b,
            divergence=compared.divergence,
            tokens_a=compared.tokens_a,
            tokens_b=compared.tokens_b,
            seconds_a=_seconds(left, info_a, sample),
            seconds_b=_seconds(right, info_b, sb),
            versions=versions,
        )
