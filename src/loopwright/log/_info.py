"""The rows of the run store's ``runs`` and ``samples`` tables, as read."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ._db import hostname, reading
from ._outcome import COST_KEY

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

__all__ = [
    "DAMAGED",
    "NOT_TEXT_ID",
    "RUN_COLUMNS",
    "SAMPLE_COLUMNS",
    "UNKNOWN_TIME",
    "RunInfo",
    "SampleInfo",
    "listed_run",
    "message_ids",
    "text_or_bytes",
]

RUN_COLUMNS = (
    'id, name, model, status, created, finished, input, output, messages, error, "limit", '
    "store_id, metadata, host, pid"
)
SAMPLE_COLUMNS = (
    "key, id, epoch, status, created, finished, input, target, output, messages, scores, "
    'error, "limit", store_id, metadata'
)


DAMAGED = "damaged"
"""The status of a run whose row cannot be read, as listed (:func:`listed_run`)."""
UNKNOWN_TIME = datetime.fromtimestamp(0, UTC)
"""A damaged run's ``created`` when its own cannot be read: the epoch (1970-01-01 UTC)."""
NOT_TEXT_ID = "(id not text)"
"""A damaged run's ``id`` when its own is not text (NULL, or bytes that are not UTF-8):
no run has it (``load_run`` of it finds none), and no row can be asked for by it."""
MAX_REASON = 160
"""The most characters of a damaged run's ``error`` (the reason its row cannot be read)."""


def _loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def text_or_bytes(data: bytes) -> str | bytes:
    """A connection's ``text_factory`` for rows that may be damaged: text that is not
    UTF-8 is read as its bytes (which no text field accepts: a damaged row), not an error
    that stops the whole query (the default)."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


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


def _cut(text: str, n: int) -> str:
    text = " ".join(text[: 4 * n].split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _why(ex: BaseException) -> str:
    """What is wrong, in a line: ``Type`` or its message's first line."""
    if isinstance(ex, RecursionError):
        return "JSON nested too deep"
    text = str(ex)
    return text.splitlines()[0] if text.strip() else type(ex).__name__


def _column(name: str, read: Callable[[Any], T], value: Any) -> T:
    """``read(value)``, a column of a row; what fails names the column."""
    try:
        return read(value)
    except (ValueError, RecursionError) as ex:
        raise ValueError(f"its {name}: {_cut(_why(ex), MAX_REASON)}") from ex


def _valid(make: Callable[..., M], /, **fields: Any) -> M:
    """``make(**fields)``; a field of the wrong type is one line naming it (the value
    quoted, cut), not pydantic's report of every error."""
    try:
        return make(**fields)
    except ValidationError as ex:
        errors = ex.errors(include_url=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"]) or "row"
        value = _cut(repr(first.get("input")), 40)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ValueError(f"its {where}: {first['msg']}: {value}{more}") from ex


def listed_run(row: sqlite3.Row | tuple[Any, ...], samples: int = 0) -> RunInfo:
    """A row of the ``runs`` table as a listing shows it: its :class:`RunInfo`, or, for a
    row that cannot be read (a wrong type, JSON of the wrong shape, a time out of range:
    hand-edited, or written by another version), a placeholder whose ``status`` is
    ``damaged`` and whose ``error`` says why (one line, at most :data:`MAX_REASON`
    characters, quoting at most 40 of the damaged value). The placeholder keeps the
    row's ``id``, ``name`` and ``model`` when they are text (``id``: else
    :data:`NOT_TEXT_ID`), its ``created`` when readable (else :data:`UNKNOWN_TIME`) and
    its samples count; nothing else. Reading the run itself (``load_run(id).info``)
    still raises the row's :class:`RunStoreError`."""
    try:
        return RunInfo._from_row(row, samples)
    except (ValueError, RecursionError) as ex:
        return RunInfo._damaged(row, samples, _cut(_why(ex), MAX_REASON))


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
    ``interrupted`` for a run whose process on this host died while it was running, or,
    in a listing only (``list_runs``, the viewer's pages), ``damaged`` for a row that
    cannot be read: a placeholder with the row's ``id`` (``"(id not text)"`` when it is
    not text), ``name`` and ``model`` when they are text, ``created`` when readable (else
    the epoch, 1970-01-01 UTC), ``samples``, and ``error`` saying what is wrong (one
    line, at most 160 characters); its other fields are their defaults
    (:func:`listed_run`).
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
        if not isinstance(id, str):  # (a blob or NULL: no reader can ask for it)
            raise ValueError(f"its id: not text but {_cut(repr(id), 40)}")
        if status == "running" and pid and host == hostname() and not _alive(pid):
            status = "interrupted"
        meta = _column("metadata", _loads, metadata) or {}
        if not isinstance(meta, dict):
            raise ValueError(f"its metadata: not a JSON object but {type(meta).__name__}")
        cost = meta.pop(COST_KEY, None)
        if not isinstance(cost, dict):
            cost = {}
        dollars, unpriced = cost.get("dollars"), cost.get("unpriced_calls")
        return _valid(
            cls,
            id=id,
            name=name,
            model=model,
            status=status,
            created=_column("created", _time, created),
            finished=_column("finished", _time, finished),
            input=_column("input", _loads, input),
            output=_column("output", _loads, output),
            error=error,
            limit=_column("limit", _loads, limit),
            metadata=meta,
            store_id=store_id,
            message_ids=_column("messages", _loads, messages),
            host=host,
            pid=pid,
            samples=samples,
            cost=dollars if isinstance(dollars, (int, float)) else None,
            unpriced_calls=unpriced if isinstance(unpriced, int) else 0,
            resumes=resumes if isinstance(resumes := meta.get("resumes"), int) else 0,
        )

    @classmethod
    def _damaged(cls, row: sqlite3.Row | tuple[Any, ...], samples: int, why: str) -> RunInfo:
        """The placeholder listing a row that cannot be read (see :func:`listed_run`)."""
        id, name, model, _, created = row[:5]
        try:
            when = _time(created) or UNKNOWN_TIME
        except ValueError:
            when = UNKNOWN_TIME
        return cls(
            id=id if isinstance(id, str) else NOT_TEXT_ID,
            name=name if isinstance(name, str) else None,
            model=model if isinstance(model, str) else None,
            status=DAMAGED,
            created=when,
            error=why,
            samples=samples,
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
