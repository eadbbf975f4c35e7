"""The step an eval sample goes on from, when the part before it made no model call.

An eval's sample continued by a resume runs in the resumed eval's new run, and its
recorded step is answered from the store there without a model call (no ``ModelEvent``
in the new run). A part that then made no model call of its own (it waited for approval
again: the policy deferred its calls anew, or it was interrupted again before its next
call) has no step to go on from: read alone, the sample would start over. Its step is
the one of the part it continued (``carried``'s mark names the run and the sample), with
the results of that step's calls a later part recorded.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from ..log import RunStoreError, load_run
from ..log._resume_point import CARRIED_KEY, ResumePoint, resume_point
from ..model import ToolMessage
from ..transcripts import ToolEvent

__all__ = ["with_earlier_step"]

MAX_PARTS = 100
"""Parts followed back at most (a chain of marks that loops is cut there)."""


def _came_from(metadata: dict[str, Any]) -> tuple[str, str] | None:
    mark = metadata.get(CARRIED_KEY)
    if not isinstance(mark, dict):
        return None
    run, sample = mark.get("run"), mark.get("sample")
    return (run, sample) if isinstance(run, str) and isinstance(sample, str) else None


def with_earlier_step(point: ResumePoint, db: str | os.PathLike[str] | None) -> ResumePoint:
    """``point``, its step that of the latest earlier part that made one (see the module's
    docstring) when it has none of its own; as it is when no earlier part made one, or
    an earlier part's run is no longer in the store (the sample starts over)."""
    if point.last is not None:
        return point
    parts = [(point.run_id, point.sample)]
    current = point
    try:
        while current.last is None:
            came = _came_from(current.metadata)
            if came is None or came in parts or len(parts) > MAX_PARTS:
                return point
            parts.append(came)
            current = resume_point(came[0], db, sample=came[1])
        last = current.last
        results = dict(last.results)
        waiting = {c.id for c in last.in_flight}
        for run, sample in parts[:-1]:  # (the later parts: what of the step they ran)
            results.update(_ran(run, sample, db, waiting))
    except RunStoreError:
        return point
    in_flight = [c for c in last.in_flight if c.id not in results]
    step = dataclasses.replace(last, results=results, in_flight=in_flight)
    return dataclasses.replace(point, last=step)


def _ran(
    run: str, sample: str, db: str | os.PathLike[str] | None, ids: set[str]
) -> dict[str, ToolMessage]:
    """The recorded results of the calls ``ids`` in that part of the sample."""
    found: dict[str, ToolMessage] = {}
    with load_run(run, db) as log:
        for ev in log.events(sample):
            if (
                isinstance(ev, ToolEvent)
                and ev.call.id in ids
                and not ev.pending
                and ev.failure is None
                and ev.result is not None
            ):
                found[ev.call.id] = ev.result
    return found
