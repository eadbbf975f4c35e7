"""The ``approvals`` table: calls a run's approval policy deferred, and the decisions
people recorded about them, from any process.

A row is one deferred call of a run (``run_id``, ``call_id``): its tool, its arguments
(the ``ToolCall`` as JSON) and their hash, the policy that deferred it and why. Its
``state`` is ``pending`` until a person decides (``decided``: ``approve`` or ``reject``,
with the hash of the arguments decided about and a message), then ``applied`` once a
continuation of the run took the decision. A call deferred again (a continuation whose
policy defers it anew) is ``pending`` again. The table is made by the first write; a
store without it has no deferred calls.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from .._errors import LoopwrightError
from ..model import ToolCall
from ..tools import PendingCall
from ._db import connect, reading, resolve_db

if TYPE_CHECKING:
    import sqlite3

    from ..approval import Decided

__all__ = [
    "ApprovalRefused",
    "DeferredCall",
    "claim_decisions",
    "deferred_calls",
    "record_decisions",
    "record_pending",
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


def _writing(path: os.PathLike[str] | str) -> sqlite3.Connection:
    conn = connect(path)
    conn.execute(_TABLE)
    return conn


def record_pending(
    db: str | os.PathLike[str] | None, run_id: str, pending: Sequence[PendingCall]
) -> None:
    """Keep ``pending`` as the run's calls waiting for a decision (a call deferred
    before is pending again, its earlier decision dropped)."""
    path = resolve_db(db)
    now = time.time()
    rows = [
        (
            run_id,
            p.call.id,
            p.call.function,
            p.call.model_dump_json(),
            p.arguments_hash,
            p.approver,
            p.explanation,
            now,
        )
        for p in pending
    ]
    with contextlib.closing(_writing(path)) as conn, reading(path):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT OR REPLACE INTO approvals (run_id, call_id, tool, call, arguments_hash, "
            "approver, explanation, state, created) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
            rows,
        )
        conn.execute("COMMIT")


def _rows(conn: sqlite3.Connection, run_id: str) -> list[DeferredCall]:
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'approvals'"
    ).fetchone()
    if has is None:
        return []
    out = []
    for row in conn.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE run_id = ? ORDER BY created, rowid", (run_id,)
    ):
        _, call, digest, approver, why, state, decision, decided_hash, message = row[:9]
        created, decided = row[9:]
        out.append(
            DeferredCall(
                call=ToolCall.model_validate_json(call),
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


def deferred_calls(db: str | os.PathLike[str] | None, run_id: str) -> list[DeferredCall]:
    """Every deferred call of the run (pending, decided or applied), oldest first."""
    path = resolve_db(db)
    with contextlib.closing(connect(path, create=False)) as conn, reading(path):
        return _rows(conn, run_id)


def _status(conn: sqlite3.Connection, run_id: str) -> str | None:
    row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def record_decisions(
    db: str | os.PathLike[str] | None,
    run_id: str,
    decisions: Iterable[tuple[str, Literal["approve", "reject"], str | None, str | None]],
) -> list[DeferredCall]:
    """Record decisions ``(call_id, decision, message, arguments_hash or None)`` about the
    run's pending calls, all or none, and return the calls decided about.

    Raises:
        ApprovalRefused: The run is not waiting for approval, a call is not pending, or
            a hash given is not the hash of the pending call's arguments.
    """
    path = resolve_db(db)
    wanted = list(decisions)
    with contextlib.closing(_writing(path)) as conn, reading(path):
        conn.execute("BEGIN IMMEDIATE")
        try:
            status = _status(conn, run_id)
            if status != "waiting":
                raise ApprovalRefused(
                    f"run {run_id} is not waiting for approval (its status is {status})"
                )
            rows = {r.call_id: r for r in _rows(conn, run_id)}
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
    (deciding about them again is refused). Returns the decisions by call id (applied
    ones too: a continuation interrupted before it ran a call gives its decision to the
    next) and the ids of the calls still pending. (Two continuations at once: the run's
    reopening lets one take it, ``RunRecorder.reopen``.)

    Raises:
        ApprovalRefused: The run was seen waiting, but is no longer (another process
            continued it meanwhile).
    """
    from ..approval import Decided

    path = resolve_db(db)
    with contextlib.closing(_writing(path)) as conn, reading(path):
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
