"""Deferred approval at the run's level: a run that waits, and the decisions about it.

When an approval policy defers calls (``approval/_deferred.py``), the agent stops with
``state.completed == "waiting"`` and ``state.pending``; :func:`park` keeps those calls
in the run store (``log/_approvals.py``) before the run's row says ``waiting``, so a
reader that sees the status finds them. :func:`approve` records a person's decisions,
from any process; :func:`continuation_approver` gives a continued run (``lw.resume``)
the approver that applies them: the policy in force then, asked again, and the
decisions, each for the arguments it was made for.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigurationError
from ..agents import AgentState
from ..log import resolve_db
from ..log._approvals import (
    ApprovalRefused,
    DeferredCall,
    claim_decisions,
    deferred_calls,
    not_waiting,
    record_decisions,
    record_pending,
    release_claim,
)

if TYPE_CHECKING:
    from ..log._resume_point import ResumePoint
    from ..tools import Approver
    from ._scope import RunScope

__all__ = [
    "ApprovalRefused",
    "approve",
    "continuation_approver",
    "park",
    "pending_calls",
    "released_on_failure",
    "run_id_of",
]


async def park(scope: RunScope, state: AgentState) -> None:
    """Keep the calls the run waits for in the run store (before its row says so)."""
    if scope.nested and scope.within is not None:
        # an eval sample's run: the sample ends ``waiting`` (evals/_runner.py), its calls
        # in its transcript; a resume of the eval asks the task's policy again. No
        # decisions are kept for a sample (the approvals table is per run)
        return
    if scope.nested:
        raise ConfigurationError(
            "an approval policy deferred a call in a run inside another (an agent used as "
            "a tool): deferred approval works for a run of its own (or an eval's sample) "
            "only, which can wait and be continued"
        )
    ids = [p.call.id for p in state.pending]
    if len(set(ids)) != len(ids):  # (a model's are made unique: an agent's own code's bug)
        raise ValueError(
            f"two deferred calls share an id ({sorted(i for i in ids if ids.count(i) > 1)[0]!r}): "
            "a decision could not tell them apart; give each tool call of a message its own id"
        )
    if scope.db_path is not None and state.pending:
        await asyncio.to_thread(record_pending, scope.db_path, scope.run_id, state.pending)


def pending_calls(run_id: str, *, db: str | os.PathLike[str] | None = None) -> list[DeferredCall]:
    """The calls of a run waiting for a person's decision (``state == "pending"``), oldest
    first. ``lw.log._approvals.deferred_calls`` lists decided ones too."""
    run_id = _run_id(run_id, db)
    return deferred_calls(db, run_id, states=("pending",))


def run_id_of(run: str, db: str | os.PathLike[str] | None) -> str:
    """The id of the run ``run`` names (an id, or a unique prefix of one)."""
    return _run_id(run, db)


def _run_id(run: str, db: str | os.PathLike[str] | None, *, waiting: bool = False) -> str:
    from ..log import load_run

    with load_run(run, db=db) as log:  # (a unique prefix of an id is enough)
        info = log.info
    if waiting and info.status != "waiting":
        raise not_waiting(info.id, info.status)
    if info.status == "waiting" and info.metadata.get("kind") == "eval":
        raise ApprovalRefused(
            f"run {info.id} is an eval whose samples wait for approval: decisions about an "
            "eval's samples are not kept; resume the eval (`loopwright runs resume` or "
            "lw.eval(..., resume=)) with an approval policy that decides their calls"
        )
    return info.id


def approve(
    run_id: str,
    *,
    approve: Iterable[str | DeferredCall] | Mapping[str, str | None] = (),
    reject: Mapping[str, str | None] | Iterable[str] = (),
    all: bool = False,
    shown: str | None = None,
    message: str | None = None,
    db: str | os.PathLike[str] | None = None,
) -> list[DeferredCall]:
    """Record a person's decisions about a waiting run's deferred calls (from any
    process); continue the run afterwards with ``lw.resume(run_id, agent=...)``.

    Every decision is checked first, and all are recorded or none: the run must be
    ``waiting`` and each call pending. An approval is for the arguments the person
    saw: give the calls shown (``approve=calls``, as :func:`pending_calls` returned
    them) or their hashes (``approve={call_id: hash}``); a call whose arguments are
    others now (the run was continued elsewhere, and waits again with a call of the
    same id) is refused. A bare call id (``approve=["call_1"]``) approves the
    arguments the call has when the decision is recorded, seen or not: for a program
    that decides by itself. ``all=True`` with ``shown`` (the digest
    :func:`~loopwright.approval._shown.listing_digest` of the calls a listing showed
    whole, as ``loopwright runs approve`` prints it) approves those calls, and is
    refused if the calls waiting are not those; never a call a listing cuts. Without
    ``shown``, ``all=True`` approves every pending call, seen or not: for a program
    that decides by itself, never for a person's decision. When the run continues,
    the policy in force is asked again (a call it denies is denied).

    Args:
        run_id: The run (an id, or a unique prefix of one).
        approve: The calls to approve (as :func:`pending_calls` returned them: each for
            its arguments), or ``{call_id: arguments hash}`` (``None``: any), or ids.
        reject: Call ids to reject (or ``{call_id: message}``: the model is told the
            message, as the call's error result; ``None``: ``message``).
        all: Approve every pending call not rejected (with ``shown``: those a listing
            showed whole, if they are the ones it showed).
        shown: With ``all``: the digest of the calls a listing showed whole.
        message: The default message of a rejection (and a note kept with an approval).
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).

    Returns:
        The calls decided about, as they were pending.

    Raises:
        ApprovalRefused: The run is not waiting, a call is not pending, a hash differs,
            the calls waiting are not those ``shown`` names, or nothing was decided.
    """
    run_id = _run_id(run_id, db, waiting=True)
    rejects = dict(reject) if isinstance(reject, Mapping) else dict.fromkeys(reject)
    approves: dict[str, str | None] = (
        dict(approve) if isinstance(approve, Mapping) else _pinned(approve)
    )
    both = sorted(set(rejects) & set(approves))
    if both:
        raise ConfigurationError(f"approve: calls both approved and rejected: {both}")
    if shown is not None and not all:
        raise ConfigurationError("approve: shown= goes with all=True")
    if all:
        for call in _all(run_id, shown, db):
            if call.call_id not in rejects:  # (pinned: for the arguments read here)
                approves.setdefault(call.call_id, call.arguments_hash)
    if not approves and not rejects:
        raise ApprovalRefused(f"approve: no decision given (run {run_id} has pending calls?)")
    decisions: list[tuple[str, Literal["approve", "reject"], str | None, str | None]] = [
        (call_id, "approve", message, digest) for call_id, digest in approves.items()
    ]
    decisions += [(call_id, "reject", why or message, None) for call_id, why in rejects.items()]
    # (checked again where they are recorded: another process may park the run's calls
    # anew between the check above and the recording)
    check = None if shown is None else (lambda calls: _shown_whole(run_id, shown, calls))
    return record_decisions(resolve_db(db), run_id, decisions, check=check)


def _pinned(calls: Iterable[str | DeferredCall]) -> dict[str, str | None]:
    """Call ids to approve, each with the hash of the arguments shown (a bare id: none)."""
    out: dict[str, str | None] = {}
    for c in calls:
        if isinstance(c, str):
            out[c] = None
        elif isinstance(c, DeferredCall):
            out[c.call_id] = c.arguments_hash
        else:
            raise ConfigurationError(f"approve: expected call ids or DeferredCalls, got {c!r}")
    return out


def _all(run_id: str, shown: str | None, db: str | os.PathLike[str] | None) -> list[DeferredCall]:
    """The calls ``all=True`` approves: every pending one, or with ``shown``, those a
    listing shows whole, if ``shown`` is their digest."""
    calls = pending_calls(run_id, db=db)
    return calls if shown is None else _shown_whole(run_id, shown, calls)


def _shown_whole(run_id: str, shown: str, calls: list[DeferredCall]) -> list[DeferredCall]:
    """The calls of ``calls`` (the run's pending ones) a listing shows whole, if
    ``shown`` is their digest (else refused)."""
    from ..approval._shown import listing_digest, shown_whole

    whole = [c for c in calls if shown_whole(c.call)]
    digest = listing_digest((c.call_id, c.arguments_hash) for c in whole)
    if digest != shown.strip().lower():
        raise ApprovalRefused(
            f"run {run_id}: the calls waiting are not those the listing showed whole (its "
            f"digest {shown[:16]}..., theirs now {digest[:16]}...): a call was added, decided "
            "or its arguments changed since; list them again and read them"
        )
    return whole


def continuation_approver(
    run_id: str,
    policy: str | Approver | Sequence[Any] | None,
    db: str | os.PathLike[str] | None,
    *,
    waiting: bool,
    unanswered: Collection[str] = (),
) -> str | Approver | Sequence[Any] | None:
    """The approver a continued run is given: ``policy`` (as ``run(approval=)`` takes
    it) with the decisions recorded about the run's deferred calls (see
    :func:`~loopwright.log._approvals.claim_decisions`; ``waiting``: the run was seen
    waiting, its row is now ``running`` here); ``policy`` itself when the run deferred
    no call. ``unanswered``: the ids of the calls of the step it stopped in that have
    no recorded result: the decisions apply to those only (without a policy, those never
    shown to a person wait again)."""
    from ..approval import get_approval_policy, with_decisions

    checked = get_approval_policy(policy)  # (a mistake is refused before the claim)
    decisions, still = claim_decisions(resolve_db(db), run_id, waiting=waiting)
    # a decision is about a call of the step the run stopped in; one applied in an
    # earlier continuation (its call ran) approves nothing now, even a repeat of it
    decisions = {k: v for k, v in decisions.items() if k in unanswered}
    if not decisions and not still:
        return policy
    return with_decisions(checked, decisions, still, unasked=unanswered)


@contextlib.contextmanager
def released_on_failure(
    db: str | os.PathLike[str] | None, point: ResumePoint, *, claimed: bool
) -> Iterator[None]:
    """Around a continuation that ``claimed`` a waiting run's decisions: if it fails
    before it reopened the run, the run waits again (decidable, continuable)."""
    try:
        yield
    except BaseException:
        if claimed:
            release_claim(db, point.run_id, point.resumes + 1)
        raise
