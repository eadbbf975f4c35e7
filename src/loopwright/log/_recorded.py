"""A recorded run's steps as replay needs them: each top-level model call's full request
(messages, tools, config), its output, and the tool calls that answered it.

Only the run's own steps count (as in ``_diff.py``): model and tool calls inside a tool
call (an agent used as a tool) or a subtask are the tool's business, not steps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..model import ChatMessage, GenerateConfig, ModelOutput, ToolInfo
from ..transcripts import ModelEvent, SpanBegin, ToolEvent
from ._reader import load_run

__all__ = ["RecordedRun", "RecordedStep", "recorded_run"]


@dataclass(frozen=True)
class RecordedStep:
    """One recorded step: what the agent asked, what the model answered, and the tool
    calls that followed (in the order they began; still-pending calls left out)."""

    messages: list[ChatMessage]
    tools: list[ToolInfo]
    config: GenerateConfig
    output: ModelOutput
    tool_events: list[ToolEvent] = field(default_factory=list)


@dataclass(frozen=True)
class RecordedRun:
    """A run (or one of its samples) as recorded: its id, name, input and steps."""

    run_id: str
    name: str | None
    input: Any
    steps: list[RecordedStep]


def recorded_run(
    run: str | os.PathLike[str],
    db: str | os.PathLike[str] | None = None,
    sample: str | None = None,
) -> RecordedRun:
    """Read ``run`` (an id, a unique id prefix, or a JSON export) for replay; with
    ``sample``, that sample's steps and input (a sample id or key)."""
    with load_run(run, db) as log:
        info = log.info
        recorded_input: Any = info.input
        if sample is not None:
            found = [s for s in log.samples if sample in (s.key, s.id)]
            recorded_input = found[0].input if found else None
        steps: list[RecordedStep] = []
        inputs: dict[str, list[ChatMessage]] = {}  # a step's model event id -> its input
        spans: set[str | None] = {None}
        for ev in log.events(sample):
            if ev.span_id not in spans:
                continue  # inside a tool call or a subtask
            if isinstance(ev, SpanBegin):
                spans.add(ev.id)
            elif isinstance(ev, ModelEvent) and ev.output is not None and ev.error is None:
                base = inputs.get(ev.input_base) if ev.input_base is not None else None
                if base is not None and ev.input_base_count <= len(base):
                    # the usual step extends one before: a slice and its new messages, so
                    # reading a step costs its new messages
                    messages = base[: ev.input_base_count] + [log.message(i) for i in ev.input]
                else:
                    messages = log.model_input(ev)
                inputs[ev.id] = messages
                steps.append(
                    RecordedStep(
                        messages=messages,
                        tools=list(ev.tools),
                        config=ev.config,
                        output=ev.output,
                    )
                )
            elif isinstance(ev, ToolEvent) and steps and not ev.pending:
                steps[-1].tool_events.append(ev)
        return RecordedRun(log.run_id, info.name, recorded_input, steps)
