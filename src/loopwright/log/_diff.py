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
from dataclasses import dataclass, field
from typing import Any, Literal

from ..transcripts import ModelEvent, SpanBegin, ToolEvent
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


def steps(log: RunLog, sample: str | None = None) -> list[Step]:
    """The top-level steps of a run (or of one of its samples), in order."""
    found: list[Step] = []
    current: dict[str, Any] | None = None
    spans: set[str | None] = {None}
    for ev in log.events(sample):
        if ev.span_id not in spans:
            continue  # inside a tool call, a subtask or a span's own agents
        if isinstance(ev, SpanBegin):
            spans.add(ev.id)
        elif isinstance(ev, ModelEvent) and ev.output is not None:
            if current is not None:
                found.append(Step(**current))
            message = ev.output.message
            current = {
                "index": len(found),
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
        found.append(Step(**current))
    return found


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return json.dumps(value, sort_keys=True)


def _first_divergence(a: list[Step], b: list[Step]) -> Divergence | None:
    for x, y in zip(a, b, strict=False):
        for kind in ("tools", "config", "text", "tool_calls", "tool_results"):
            left, right = getattr(x, kind), getattr(y, kind)
            if left != right:
                return Divergence(x.index, kind, _cut(_shown(left)), _cut(_shown(right)))
    if len(a) != len(b):
        shorter = min(len(a), len(b))
        return Divergence(shorter, "length", f"{len(a)} steps", f"{len(b)} steps")
    return None


def _versions(log: RunLog) -> dict[str, str]:
    recorded = log.info.metadata.get("versions")
    return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}


def _seconds(log: RunLog, sample: str | None) -> float | None:
    info = next((s for s in log.samples if sample in (s.key, s.id)), None) if sample else None
    row = info if info is not None else log.info
    if row.finished is None:
        return None
    return (row.finished - row.created).total_seconds()


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
    defaults to the same id in ``b``).
    """
    path_b: str | os.PathLike[str] | None = db_b if db_b is not None else db
    with load_run(a, db=db) as left, load_run(b, db=path_b) as right:
        sb = sample_b if sample_b is not None else sample
        steps_a, steps_b = steps(left, sample), steps(right, sb)
        va, vb = _versions(left), _versions(right)
        versions = {
            name: (va.get(name), vb.get(name))
            for name in sorted(set(va) | set(vb))
            if va.get(name) != vb.get(name)
        }
        return RunDiff(
            a=left.run_id,
            b=right.run_id,
            steps_a=len(steps_a),
            steps_b=len(steps_b),
            divergence=_first_divergence(steps_a, steps_b),
            tokens_a=sum(s.tokens for s in steps_a),
            tokens_b=sum(s.tokens for s in steps_b),
            seconds_a=_seconds(left, sample),
            seconds_b=_seconds(right, sb),
            versions=versions,
        )
