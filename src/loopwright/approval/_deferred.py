"""Deferred approval: a policy that makes the run wait for a person's decision, and the
approver in force when a waiting run continues.

A call a policy defers stops the run (``state.completed == "waiting"``); the run store
keeps it as pending. A person records a decision later, from any process
(``lw.approve``, ``loopwright runs approve``). When the run continues, every call is
asked about again through :func:`with_decisions`: the policy in force then is asked
first (a call it would deny is denied, whatever the person said), and a call it defers,
or approves, gets the person's decision, if that decision was made for the call's
current arguments (:func:`~loopwright.tools.arguments_hash`). A decision is about one
call: it is spent on the first call with its id the continued run asks about, so a model
that repeats the call (same id, same arguments) in a later step gets no approval from it.
A call that was pending without a decision, or whose decision was made for other
arguments, is deferred again; so is, when the run continues with no policy in force, a
call of the interrupted step that no one was asked about (one after a deferred call).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..model import ChatMessage, ToolCall
from ..tools._approval import Approval, Approver, arguments_hash
from ._policy import SENSITIVE_TOOLS, ApprovalRule, approval_policy
from ._record import recorded

__all__ = ["Decided", "defer_approval", "with_decisions"]


class Decided(BaseModel):
    """A person's decision about one deferred call, as the run store keeps it."""

    model_config = ConfigDict(defer_build=True)

    call_id: str
    decision: Literal["approve", "reject"]
    arguments_hash: str
    """The hash of the arguments the person decided about."""
    message: str | None = None
    """With ``reject``: what the model is told (default: a standard text)."""


REJECTED = "rejected by the person who reviewed it"


def defer_approval(
    tools: str | Sequence[str] = SENSITIVE_TOOLS,
    *,
    when: Callable[[dict[str, Any]], bool] | None = None,
    otherwise: Approver | str = "approve",
    explanation: str | None = None,
    name: str = "defer",
) -> Approver:
    """A policy that defers the calls of ``tools`` (when ``when`` holds for their
    arguments) until a person decides, and answers ``otherwise`` for the others.

    A deferred call stops the run with ``state.completed == "waiting"`` (status
    ``waiting`` in the run store, with the pending calls); decide with
    ``lw.approve(run_id, ...)`` or ``loopwright runs approve RUN_ID``, from any process,
    then continue the run with ``lw.resume(run_id, agent=..., approval=...)``.

    Args:
        tools: Tool-name glob pattern(s) to defer (default: ``bash`` and ``python``).
        when: A predicate on the arguments; only calls for which it is true are deferred.
        otherwise: What the other calls get (an approver, or ``"approve"``,
            ``"reject"``, ``"human"``...).
        explanation: Why the calls wait (recorded, shown to the person).
        name: The policy's name in decisions, transcripts and the run store.
    """
    return approval_policy(
        [
            ApprovalRule(tools, "defer", when=when, explanation=explanation),
            ApprovalRule("*", otherwise),
        ],
        name=name,
    )


def with_decisions(
    policy: Approver | None,
    decisions: Mapping[str, Decided],
    waiting: Collection[str] = (),
    *,
    unasked: Collection[str] = (),
) -> Approver:
    """The approver of a continued run: ``policy`` (``None``: approve) combined with the
    person's ``decisions`` by call id; the calls of ``waiting`` (ids of calls pending
    without a decision) are deferred again unless the policy denies them (see the
    module's docstring). ``unasked``: ids of calls of the step the run stopped in that
    no one was asked about (those after a deferred one); with no ``policy`` in force,
    such a call is deferred, never approved unseen. Each decision answers one call,
    the first with its id asked about; a later call with that id (a model repeating it)
    is asked about as any other."""
    spent: set[str] = set()

    async def decide(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        asked = (
            await policy(call, messages)
            if policy is not None
            else Approval(decision="approve", approver="none")
        )
        decided = None if call.id in spent else decisions.get(call.id)
        if decided is not None:
            spent.add(call.id)  # (whatever it answers now: one decision, one call)
        if asked.decision in ("reject", "terminate", "escalate"):
            return asked  # the policy in force denies it: a person's approval is not enough
        if decided is None:
            if call.id in waiting and asked.decision != "defer":
                return Approval(
                    decision="defer",
                    explanation="the call still waits for a person's decision",
                    approver="deferred",
                )
            if policy is None and call.id in unasked:
                return Approval(
                    decision="defer",
                    explanation=(
                        "no approval policy is in force where the run continues and no "
                        "person has seen this call: it waits for a person's decision"
                    ),
                    approver="deferred",
                )
            return asked
        if decided.arguments_hash != arguments_hash(call):
            return Approval(
                decision="defer",
                explanation=(
                    "a decision was recorded for this call id but for other arguments; "
                    "it is refused, and the call waits for a decision on these arguments"
                ),
                approver="deferred",
            )
        if decided.decision == "reject":
            return Approval(
                decision="reject", explanation=decided.message or REJECTED, approver="person"
            )
        if asked.decision == "modify":
            return asked  # the policy's change to an approved call stands
        return Approval(decision="approve", explanation=decided.message, approver="person")

    return recorded("deferred", decide)
