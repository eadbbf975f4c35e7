"""The rows of the run store's ``runs`` and ``samples`` tables, as read."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ._db import hostname, reading
from ._outcome import COST_KEY

if TYPE_CHECKING:
    import sqlite3

__all__ = ["RUN_COLUMNS", "SAMPLE_COLUMNS", "RunInfo", "SampleInfo", "message_ids"]

RUN_COLUMNS = (
    'id, name, model, status, created, finished, input, output, messages, error, "limit", '
    "store_id, metadata, host, pid"
)
SAMPLE_COLUMNS = (
    "key, id, epoch, status, created, finished, input, target, output, messages, scores, "
    'error, "limit", store_id, metadata'
)


def _loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def message_ids(text: str, where: str | os.PathLike[str]) -> list[str]:
    """The ids a ``messages`` column lists (a run's or sample's final conversation).

    Raises:
        RunStoreError: The column is not a JSON list of ids (naming the file ``where``).
    """
    with reading(where):
        ids = json.loads(text)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError(f"a messages column that is not a list of ids: {text[:40]!r}")
    return ids


def _time(value: float | None) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"a time that is not a number: {str(value)[:40]!r}")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError) as ex:  # (ValueError too: NaN)
        raise ValueError(f"a time out of range: {value!r}") from ex


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or not 0 < pid < 1 << 31:
        return False  # (not a process id: a damaged row, not a process to signal)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunInfo(BaseModel):
    """A run, as listed: what it was, how it ended.

    ``status`` is ``running``, ``success``, ``error``, ``cancelled``, ``limit``, ``stopped``
    (a hook ended it: ``lw.StopRun``), ``waiting`` (an approval policy deferred calls:
    it waits for a person's decision, ``lw.approve``), or
    ``interrupted`` for a run whose process on this host died while it was running.
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str | None = None
    model: str | None = None
    status: str
    created: datetime
    finished: datetime | None = None
    input: JsonValue = None
    output: JsonValue = None
    error: str | None = None
    limit: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    store_id: str | None = None
    message_ids: list[str] | None = None
    """Ids of the final conversation's messages, when the run said them."""
    host: str | None = None
    pid: int | None = None
    samples: int = 0
    cost: float | None = None
    """Dollars of the run's model calls with a known price, written when the run ended
    (``None``: it has not ended, or none of its calls had a known price)."""
    unpriced_calls: int = 0
    """The run's model calls whose price was not known: when not 0, ``cost`` is a
    lower bound."""
    resumes: int = 0
    """How many times the run was resumed (``lw.resume``) after it stopped unfinished
    (``metadata["resumes"]``); its transcript marks where each part begins."""

    @classmethod
    def _from_row(cls, row: sqlite3.Row | tuple[Any, ...], samples: int = 0) -> RunInfo:
        (id, name, model, status, created, finished, input, output, messages, error, limit,
         store_id, metadata, host, pid) = row  # fmt: skip
        if status == "running" and pid and host == hostname() and not _alive(pid):
            status = "interrupted"
        meta = _loads(metadata) or {}
        if not isinstance(meta, dict):
            raise ValueError(f"run {str(id)[:40]!r}: its metadata is not a JSON object")
        cost = meta.pop(COST_KEY, None)
        if not isinstance(cost, dict):
            cost = {}
        dollars, unpriced = cost.get("dollars"), cost.get("unpriced_calls")
        return cls(
            id=id,
            name=name,
            model=model,
            status=status,
            created=_time(created),
            finished=_time(finished),
            input=_loads(input),
            output=_loads(output),
            error=error,
            limit=_loads(limit),
            metadata=meta,
            store_id=store_id,
            message_ids=_loads(messages),
            host=host,
            pid=pid,
            samples=samples,
            cost=dollars if isinstance(dollars, (int, float)) else None,
            unpriced_calls=unpriced if isinstance(unpriced, int) else 0,
            resumes=resumes if isinstance(resumes := meta.get("resumes"), int) else 0,
        )


class SampleInfo(BaseModel):
    """A sample of a run (one dataset item in one epoch)."""

    model_config = ConfigDict(defer_build=True)

    key: str
    """The sample's stream key: pass it (or the sample's id) to ``RunLog`` methods."""
    id: str
    epoch: int
    status: str
    created: datetime
    finished: datetime | None = None
    input: JsonValue = None
    target: JsonValue = None
    output: JsonValue = None
    scores: dict[str, Any] | None = None
    error: str | None = None
    limit: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    store_id: str | None = None
    message_ids: list[str] | None = None

    @classmethod
    def _from_row(cls, row: tuple[Any, ...]) -> SampleInfo:
        (key, id, epoch, status, created, finished, input, target, output, messages, scores,
         error, limit, store_id, metadata) = row  # fmt: skip
        return cls(
            key=key,
            id=id,
            epoch=epoch,
            status=status,
            created=_time(created),
            finished=_time(finished),
            input=_loads(input),
            target=_loads(target),
            output=_loads(output),
            scores=_loads(scores),
            error=error,
            limit=_loads(limit),
            metadata=_loads(metadata) or {},
            store_id=store_id,
            message_ids=_loads(messages),
        )
