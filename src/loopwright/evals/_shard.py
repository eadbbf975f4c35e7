"""Shards: one eval split over processes or machines, with no engine needed.

Every unit of work has a stable id: (task, sample id, epoch). The units of an eval are
put in the order of their ids' SHA-256 (the same in every process and on every machine,
whatever the dataset's order) and dealt out in turn: ``Shard(i, n)`` takes the ``i``-th
of every ``n``. So ``--shard 1/3``, ``--shard 2/3`` and ``--shard 3/3`` split an eval
into three disjoint parts that cover it and differ in size by one at most, whatever
runs them: a shell loop, a Slurm or Kubernetes job array, Ray. (Adding samples to the
dataset deals the units anew: run all shards of one dataset.) Each shard writes its own
run store; running a shard again carries over the samples it already finished and runs
the rest (a sample ``waiting`` for approval is not finished: it runs again). ``merge=``
(the CLI's ``--merge STORE``) makes one eval of the shards: the finished samples of
every run of the task found in those stores are carried into one run, the missing ones
are run, and the metrics are computed over all of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from ..log import RunStoreError, SampleInfo, list_runs, load_run
from ..log._info import DAMAGED
from ..model._redact import scrub_secrets
from ._results import DONE

__all__ = ["Shard", "finished_samples", "recorded_params"]

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (isinstance(self.count, int) and isinstance(self.index, int)):
            raise ConfigurationError("a shard is two whole numbers, I/N")
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ConfigurationError(
                f"shard {self.index}/{self.count}: I must be between 1 and N (e.g. 1/3)"
            )

    @classmethod
    def parse(cls, spec: str | Shard) -> Shard:
        """``"2/3"`` -> ``Shard(2, 3)``."""
        if isinstance(spec, Shard):
            return spec
        m = _SPEC.match(spec) if isinstance(spec, str) else None
        if m is None:
            raise ConfigurationError(f"shard {spec!r}: expected I/N, e.g. 1/3")
        return cls(int(m.group(1)), int(m.group(2)))

    def select(self, task: str, units: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """This shard's share of ``task``'s units, given as (sample id, epoch)."""

        def key(unit: tuple[str, int]) -> bytes:
            return hashlib.sha256(f"{task}\x00{unit[0]}\x00{unit[1]}".encode()).digest()

        dealt = sorted(set(units), key=key)
        return set(dealt[self.index - 1 :: self.count])

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def recorded_params(params: Mapping[str, Any]) -> Any:
    """A task's parameters as an eval run records them: made JSON data first (a field of
    an object, a dataclass's ``api_key``, is then a key), then without what looks like a
    secret (:func:`~loopwright.model._redact.scrub_secrets`, which sees an object whole)."""
    from pydantic_core import to_jsonable_python

    return scrub_secrets(to_jsonable_python(dict(params), inf_nan_mode="null", fallback=repr))


def _same_params(recorded: Any, params: Mapping[str, Any]) -> bool:
    def norm(value: Any) -> str:
        return json.dumps(value or {}, sort_keys=True, default=str)

    return norm(recorded) == norm(recorded_params(params))  # (as the runner records them)


def latest_samples(
    stores: Iterable[str | os.PathLike[str]],
    *,
    task: str,
    params: Mapping[str, Any],
    shard: Shard | None = None,
    since: float | None = None,
) -> dict[tuple[str, int], tuple[SampleInfo, str]]:
    """The latest recording of each sample of ``task`` (with these ``params``) in the
    eval runs of ``stores`` (only those of ``shard``, when given), whatever its status:
    (sample id, epoch) -> (the sample, its run's id). A missing store is skipped.
    ``since``: only samples that finished at or after that time (seconds since the
    epoch), for a reader that follows the stores."""
    found: dict[tuple[str, int], tuple[SampleInfo, str]] = {}
    for store in stores:
        path = Path(store)
        if not path.exists():
            continue
        listed = list_runs(path, name=task)
        for r in listed:
            if r.status == DAMAGED:  # (its samples' params and shard cannot be known)
                raise RunStoreError(
                    f"run {r.id!r} of the task {task!r} in {str(path)!r} cannot be read "
                    f"({r.error}); it may hold samples of this eval: delete or repair its "
                    "row, or record to another run store"
                )
        runs = [
            r
            for r in listed
            if r.metadata.get("kind") == "eval"
            and _same_params(r.metadata.get("params"), params)
            and (shard is None or r.metadata.get("shard") == str(shard))
        ]
        for info in reversed(runs):  # oldest first: a later run's samples win
            with load_run(info.id, db=path) as log:
                rows = log.samples if since is None else log.samples_finished_since(since)
                for s in rows:
                    if s.status != "running" or (s.id, s.epoch) not in found:
                        found[(s.id, s.epoch)] = (s, info.id)
    return found


def finished_samples(
    stores: Iterable[str | os.PathLike[str]],
    *,
    task: str,
    params: Mapping[str, Any],
    shard: Shard | None = None,
    scored: bool = True,
) -> dict[tuple[str, int], tuple[SampleInfo, str]]:
    """The samples of :func:`latest_samples` that are done (``success``, ``limit`` or
    ``stopped``: :data:`~loopwright.evals._results.DONE`; when ``scored``, with scores),
    in the latest run that did them. One ``waiting`` for approval is not done: it runs
    again (from its start: continuing from its last step is a resume's)."""
    stores = list(stores)
    for store in stores:
        if shard is None and not Path(store).exists():  # a store named to merge must be
            raise ConfigurationError(f"merge: no run store at {str(store)!r}")
    found: dict[tuple[str, int], tuple[SampleInfo, str]] = {}
    for store in stores:
        for key, (s, run) in latest_samples([store], task=task, params=params, shard=shard).items():
            if s.status in DONE and (s.scores is not None or not scored):
                found[key] = (s, run)
    return found
