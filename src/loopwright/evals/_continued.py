"""The step an eval sample goes on from, when the part before it made no model call.

An eval's sample continued by a resume runs in the resumed eval's new run, and its
recorded step is answered from the store there without a model call (no ``ModelEvent``
in the new run). A part that then made no model call of its own (it waited for approval
again: the policy deferred its calls anew, or it was interrupted again before its next
call) has no step to go on from: read alone, the sample would start over. Its step is
the one of the part it continued (``carried``'s mark names the run and the sample), with
the results of that step's calls a later part recorded.

A sample an eval on Ray carried from a shard's run store (``_ray.py``: the mark
``ran_in`` names the shard's run) has no events in the eval's run: its part before is in
that shard's store (``<db>-shards/<run id>/``), the sample of the same id and epoch. What
that part consumed is added to the point's when the point is that row (no mark counts
it; a later part's mark counts it, as it counts every part before).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Literal

from ..log import RunStoreError, SampleInfo, load_run, resolve_db
from ..log._resume_point import CARRIED_KEY, Consumed, ResumePoint, carried, resume_point
from ..model import ToolMessage
from ..transcripts import ToolEvent
from ._results import SampleResult
from ._shard import shard_stores

if TYPE_CHECKING:
    from ..runtime import RunScope
    from ._sample import Sample

__all__ = ["RAN_IN_KEY", "keep_unstarted", "with_earlier_step"]

MAX_PARTS = 100
"""Parts followed back at most (a chain of marks that loops is cut there)."""

RAN_IN_KEY = "ran_in"
"""The metadata key of a sample an eval on Ray carried from a shard: the shard's run."""

_Part = tuple[str, str, str]  # (run id, sample key, run store)


def _came_from(point: ResumePoint, db: str) -> tuple[_Part, bool] | None:
    """The part ``point`` continued, and whether it is a shard's (on Ray)."""
    mark = point.metadata.get(CARRIED_KEY)
    if isinstance(mark, dict):
        run, sample = mark.get("run"), mark.get("sample")
        if not (isinstance(run, str) and isinstance(sample, str)):
            return None
        return (run, sample, db), False
    shard_run = point.metadata.get(RAN_IN_KEY)
    if not isinstance(shard_run, str):
        return None
    with load_run(point.run_id, db) as log:
        mine = [(s.id, s.epoch) for s in log.samples if s.key == point.sample]
    folder = shard_stores(db, point.run_id)
    if not mine or not folder.is_dir():
        return None
    for store in sorted(folder.glob("shard-*-of-*.db")):
        try:
            with load_run(shard_run, store) as log:
                found = [s.key for s in log.samples if (s.id, s.epoch) == mine[0]]
        except RunStoreError:  # (not this shard's run)
            continue
        return ((shard_run, found[0], str(store)), True) if found else None
    return None


def _plus(a: Consumed, b: Consumed) -> Consumed:
    return Consumed(
        **{f.name: getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(Consumed)}
    )


def with_earlier_step(point: ResumePoint, db: str | os.PathLike[str] | None) -> ResumePoint:
    """``point``, its step that of the latest earlier part that made one (see the module's
    docstring) when it has none of its own; as it is when no earlier part made one, or
    an earlier part's run is no longer in the store (the sample starts over)."""
    if point.last is not None:
        return point
    store = str(resolve_db(db))
    parts: list[_Part] = [(point.run_id, point.sample, store)]
    current, consumed = point, point.consumed
    try:
        while current.last is None:
            came = _came_from(current, parts[-1][2])
            if came is None or came[0] in parts or len(parts) > MAX_PARTS:
                return point
            (run, sample, where), shard = came
            parts.append(came[0])
            current = resume_point(run, where, sample=sample)
            if shard and len(parts) == 2:
                # (a Ray row continued: no mark counts what its shard consumed; past a
                # continued part's mark, the mark counts it already)
                consumed = _plus(consumed, current.consumed)
        last = current.last
        results = dict(last.results)
        waiting = {c.id for c in last.in_flight}
        for run, sample, where in parts[:-1]:  # (the later parts: what of the step they ran)
            results.update(_ran(run, sample, where, waiting))
    except RunStoreError:
        return point
    in_flight = [c for c in last.in_flight if c.id not in results]
    step = dataclasses.replace(last, results=results, in_flight=in_flight)
    return dataclasses.replace(point, last=step, consumed=consumed)


def _ran(run: str, sample: str, db: str, ids: set[str]) -> dict[str, ToolMessage]:
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


async def keep_unstarted(
    rec: RunScope, sample: Sample, epoch: int, row: SampleInfo, point: ResumePoint
) -> SampleResult:
    """Keep in the resumed eval's run (``rec``) a sample it took from the run it resumed
    (``row``, ``point``: in flight, or ``waiting``) and ended before it began it
    (cancelled, failed): as it was, marked as continuing ``point``, so that a resume of
    this run goes on with it from its step rather than start it over."""
    kept: Literal["waiting", "cancelled"] = "waiting" if row.status == "waiting" else "cancelled"
    reason = row.error if kept == "waiting" else None
    async with rec.sample(
        str(sample.id),
        epoch=epoch,
        input=sample.input,
        target=sample.target,
        metadata={**sample.metadata, **carried(point)},
    ) as srec:
        srec.finish(status=kept, reason=reason)
    return SampleResult(id=str(sample.id), epoch=epoch, status=kept, reason=reason, resumed=True)
