"""The ``approvals`` table: calls a run's approval policy deferred, and the decisions
people recorded about them, from any process.

A row is one deferred call of a run (``run_id``, ``call_id``): its tool, its arguments
(the ``ToolCall`` as JSON) and their hash, the policy that deferred it and why. Its
``state`` is ``pending`` until a person decides (``decided``: ``approve`` or ``reject``,
with the hash of the arguments decided about and a message), then ``applied`` once a
continuation of the run took the decision. A call deferred again (a continuation whose
policy defers it anew) is ``pending`` again, unless a decision not yet applied is
recorded for its arguments (that decision is kept for the next continuation). The
table is made by the first write; a store without it has no deferred calls.

Deciding and continuing are serialised by the run's row: a decision is recorded only
while the run is ``waiting``, and a continuation's claim of the decisions sets the row
to ``running`` (this host and process) in the same transaction, so a decision cannot
land between the claim and the continuation's reopening of the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from .._errors import LoopwrightError
from ..model import ToolCall
from ..tools import PendingCall, arguments_hash
from ._db import connect, hostname, reading, resolve_db
from ._fork import file_locked
from ._serialize import _json_data, sql_params

if TYPE_CHECKING:
    import sqlite3

    from ..approval import Decided

__all__ = [
    "ApprovalRefused",
    "DeferredCall",
    "claim_decisions",
    "claimed_holder",
    "deferred_calls",
    "deferred_tools",
    "not_waiting",
    "record_decisions",
    "record_pending",
    "release_claim",
]

_TABLE = """
CREATE TABLE IF NOT EXISTS approvals (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    call TEXT NOT NULL,
    arguments_hash TEXT NOT NULL,
    approver TEXT,
    explanation TEXT,
    state TEXT NOT NULL,
    decision TEXT,
    decided_hash TEXT,
    message TEXT,
    created REAL NOT NULL,
    decided REAL,
    PRIMARY KEY (run_id, call_id)
)
"""
_COLUMNS = (
    "call_id, call, arguments_hash, approver, explanation, state, decision, decided_hash, "
    "message, created, decided"
)

State = Literal["pending", "decided", "applied"]


class ApprovalRefused(LoopwrightError):
    """A decision cannot be recorded: the run is not waiting for approval, the call is
    not pending (unknown, already decided, or already run), or the arguments the
    decision was made for are not the call's arguments."""


class DeferredCall(BaseModel):
    """A deferred call of a run, as the run store keeps it."""

    model_config = ConfigDict(defer_build=True)

    call: ToolCall
    arguments_hash: str
    approver: str | None = None
    explanation: str | None = None
    state: State
    decision: Literal["approve", "reject"] | None = None
    decided_hash: str | None = None
    message: str | None = None
    created: float
    decided: float | None = None

    @property
    def call_id(self) -> str:
        return self.call.id


@contextlib.contextmanager
def _writing(path: os.PathLike[str] | str) -> Iterator[sqlite3.Connection]:
    """A connection of its own for a transaction, closed after it; a fork waits for
    the whole (see ``_fork.py``)."""
    with file_locked(), contextlib.closing(connect(path)) as conn:
        conn.execute(_TABLE)
        yield conn


def record_pending(
    db: str | os.PathLike[str] | None, run_id: str, pending: Sequence[PendingCall]
) -> None:
    """Keep ``pending`` as the run's calls waiting for a decision (a call deferred
    before is pending again, its applied decision dropped; a decision recorded but not
    applied yet is kept, if it was made for the call's arguments now)."""
    path = resolve_db(db)
    now = time.time()
    rows = [  # (as every row: the secrets learnt redacted, a lone surrogate escaped)
        sql_params(
            (
                run_id,
                p.call.id,
                p.call.function,
                _call_text(p.call),
                p.arguments_hash,
                p.approver,
                p.explanation,
                now,
            )
        )
        for p in pending
    ]
    with _writing(path) as conn, reading(path):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO approvals (run_id, call_id, tool, call, arguments_hash, approver, "
            "explanation, state, created) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?) "
            "ON CONFLICT (run_id, call_id) DO UPDATE SET tool = excluded.tool, "
            "call = excluded.call, arguments_hash = excluded.arguments_hash, "
            "approver = excluded.approver, explanation = excluded.explanation, "
            "created = excluded.created, "
            f"state = CASE WHEN {_KEEP} THEN 'decided' ELSE 'pending' END, "
            f"decision = CASE WHEN {_KEEP} THEN decision END, "
            f"decided_hash = CASE WHEN {_KEEP} THEN decided_hash END, "
            f"message = CASE WHEN {_KEEP} THEN message END, "
            f"decided = CASE WHEN {_KEEP} THEN decided END",
            rows,
        )
        conn.execute("COMMIT")


def _call_text(call: ToolCall) -> str:
    try:
        return call.model_dump_json()
    except (ValueError, UnicodeError):  # a lone surrogate: json writes it \udXXX
        return json.dumps(_json_data(call.model_dump))


def _call(text: str) -> ToolCall:
    try:
        return ToolCall.model_validate_json(text)
    except ValueError:  # pydantic's JSON parser refuses an escaped lone surrogate
        return ToolCall.model_validate(json.loads(text))


_KEEP = "approvals.state = 'decided' AND approvals.decided_hash = excluded.arguments_hash"
"""A row deferred again keeps a decision not yet applied, made for its arguments now."""


def _rows(
    conn: sqlite3.Connection,
    run_id: str,
    states: Sequence[State] | None = None,
    limit: int | None = None,
) -> list[DeferredCall]:
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'approvals'"
    ).fetchone()
    if has is None:
        return []
    where, params = "run_id = ?", [run_id]
    if states is not None:
        where += f" AND state IN ({', '.join('?' * len(states))})"
        params.extend(states)
    page = "" if limit is None else f" LIMIT {int(limit)}"
    out = []
    for row in conn.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE {where} ORDER BY created, rowid{page}", params
    ):
        _, call, digest, approver, why, state, decision, decided_hash, message = row[:9]
        created, decided = row[9:]
        out.append(
            DeferredCall(
                call=_call(call),
                arguments_hash=digest,
                approver=approver,
                explanation=why,
                state=state,
                decision=decision,
                decided_hash=decided_hash,
                message=message,
                created=created,
                decided=decided,
            )
        )
    return out


def deferred_calls(
    db: str | os.PathLike[str] | None,
    run_id: str,
    *,
    states: Sequence[State] | None = None,
    limit: int | None = None,
) -> list[DeferredCall]:
    """The deferred calls of the run (every one, or those in ``states``; at most
    ``limit``), oldest first."""
    path = resolve_db(db)
    with contextlib.closing(connect(path, create=False)) as conn, reading(path):
        return _rows(conn, run_id, states, limit)


def deferred_tools(
    db: str | os.PathLike[str] | None, run_id: str, *, states: Sequence[State]
) -> dict[str, int]:
    """How many deferred calls of the run in ``states`` there are of each tool (every
    one counted, however many a page lists)."""
    path = resolve_db(db)
    with contextlib.closing(connect(path, create=False)) as conn, reading(path):
        has = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'approvals'"
        ).fetchone()
        if has is None:
            return {}
        rows = conn.execute(
            f"SELECT tool, COUNT(*) FROM approvals WHERE run_id = ? AND state IN "
            f"({', '.join('?' * len(states))}) GROUP BY tool",
            [run_id, *states],
        ).fetchall()
    return {str(tool): int(n) for tool, n in rows}


def not_waiting(run_id: str, status: str | None) -> ApprovalRefused:
    """The refusal of a decision about a run whose status is ``status``."""
    if status == "running":
        return ApprovalRefused(
            f"run {run_id} is not waiting for approval: the run is being continued (its "
            f"status is {status}); decide once it waits again"
        )
    return ApprovalRefused(f"run {run_id} is not waiting for approval (its status is {status})")


def _status(conn: sqlite3.Connection, run_id: str) -> str | None:
    row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def record_decisions(
    db: str | os.PathLike[str] | None,
    run_id: str,
    decisions: Iterable[tuple[str, Literal["approve", "reject"], str | None, str | None]],
    *,
    check: Callable[[list[DeferredCall]], object] | None = None,
) -> list[DeferredCall]:
    """Record decisions ``(call_id, decision, message, arguments_hash or None)`` about the
    run's pending calls, all or none, and return the calls decided about. ``check``:
    given the run's pending calls in the transaction that records the decisions (no
    other process changes them meanwhile), it raises to refuse them all.

    Raises:
        ApprovalRefused: The run is not waiting for approval, a call is not pending, a
            hash given is not the hash of the pending call's arguments, or (an approval)
            the hash stored is not the hash of the call stored, which is what was shown.
    """
    path = resolve_db(db)
    wanted = list(decisions)
    with _writing(path) as conn, reading(path):
        conn.execute("BEGIN IMMEDIATE")
        try:
            status = _status(conn, run_id)
            if status != "waiting":
                raise not_waiting(run_id, status)
            rows = {r.call_id: r for r in _rows(conn, run_id)}
            if check is not None:
                check([r for r in rows.values() if r.state == "pending"])
            decided = []
            now = time.time()
            for call_id, decision, message, digest in wanted:
                row = rows.get(call_id)
                if row is None or row.state != "pending":
                    state = "unknown" if row is None else row.state
                    raise ApprovalRefused(
                        f"call {call_id!r} of run {run_id} is not pending ({state})"
                    )
                if digest is not None and digest != row.arguments_hash:
                    raise ApprovalRefused(
                        f"call {call_id!r}: the decision was made for other arguments "
                        f"(hash {digest[:12]}...) than the call's ({row.arguments_hash[:12]}...)"
                    )
                # (what the person read is the row's call; what the continuation checks
                # is its hash: an edited store could show one over the other's hash)
                if decision == "approve" and arguments_hash(row.call) != row.arguments_hash:
                    raise ApprovalRefused(
                        f"call {call_id!r} of run {run_id}: the run store's hash of the call "
                        "is not the hash of the arguments it shows (the store was changed); "
                        "it cannot be approved"
                    )
                conn.execute(
                    "UPDATE approvals SET state = 'decided', decision = ?, decided_hash = ?, "
                    "message = ?, decided = ? WHERE run_id = ? AND call_id = ?",
                    (decision, row.arguments_hash, message, now, run_id, call_id),
                )
                decided.append(row)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return decided


def claim_decisions(
    db: str | os.PathLike[str] | None, run_id: str, *, waiting: bool
) -> tuple[Mapping[str, Decided], set[str]]:
    """Take the decisions about the run's deferred calls for a continuation. With
    ``waiting`` (the run was seen waiting), its ``decided`` calls become ``applied``
    (deciding about them again is refused) and its row ``running`` in this host and
    process, in the same transaction: no decision is recorded after the claim (see
    :func:`release_claim` for a continuation that fails before it reopens the run).
    Returns the decisions by call id (applied ones too: a continuation interrupted
    before it ran a call gives its decision to the next) and the ids of the calls still
    pending. (Two continuations at once: the claim lets one take a waiting run, and
    ``RunRecorder.reopen`` one take another run.)

    Raises:
        ApprovalRefused: The run was seen waiting, but is no longer (another process
            continued it meanwhile).
    """
    from ..approval import Decided

    path = resolve_db(db)
    with _writing(path) as conn, reading(path):
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = _rows(conn, run_id)
            if waiting:
                status = _status(conn, run_id)
                if status != "waiting":
                    raise ApprovalRefused(
                        f"run {run_id} is no longer waiting for approval ({status}): "
                        "another process continued it"
                    )
                conn.execute(
                    "UPDATE approvals SET state = 'applied' WHERE run_id = ? AND state = 'decided'",
                    (run_id,),
                )
                conn.execute(
                    "UPDATE runs SET status = 'running', host = ?, pid = ? WHERE id = ?",
                    (hostname(), os.getpid(), run_id),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    decisions = {
        r.call_id: Decided(
            call_id=r.call_id,
            decision=r.decision,
            arguments_hash=r.decided_hash,
            message=r.message,
        )
        for r in rows
        if r.decision is not None and r.decided_hash is not None
    }
    return decisions, {r.call_id for r in rows if r.state == "pending"}


def claimed_holder() -> tuple[str, str | None, int | None]:
    """The status, host and pid :func:`claim_decisions` gives a waiting run's row."""
    return ("running", hostname(), os.getpid())


def release_claim(db: str | os.PathLike[str] | None, run_id: str, resumes: int) -> None:
    """Set the row of a run claimed by :func:`claim_decisions` in this process back to
    ``waiting``, if the continuation did not reopen it (its ``metadata.resumes`` is still
    below ``resumes``): the continuation failed before it began."""
    path = resolve_db(db)
    with _writing(path) as conn, reading(path):
        conn.execute(
            "UPDATE runs SET status = 'waiting' WHERE id = ? AND status = 'running' AND "
            "host IS ? AND pid IS ? AND "
            "COALESCE(json_extract(metadata, '$.resumes'), 0) < ?",
            (run_id, hostname(), os.getpid(), resumes),
        )
