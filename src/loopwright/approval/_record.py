"""Recording approval decisions as ``ApprovalEvent``\\ s, once per call.

Every approver this package builds is wrapped by :func:`recorded`: the outermost one
consulted about a call records the final answer in the current transcript; approvers
it consults (rules of a policy, a human behind a rule) do not record again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextvars import ContextVar

from .._errors import ConfigurationError
from ..model import ChatMessage, ToolCall
from ..tools._approval import Approval, Approver

__all__ = ["is_recorded", "record_decision", "recorded"]

_deciding: ContextVar[bool] = ContextVar("loopwright_approval_deciding", default=False)


def record_decision(call: ToolCall, approval: Approval) -> None:
    """Append an ``ApprovalEvent`` for ``call`` to the current transcript (if any)."""
    from ..transcripts import ApprovalEvent, current_transcript

    t = current_transcript()
    if t is None:
        return
    t._record(  # (the call and the approval are validated pydantic models)
        ApprovalEvent(
            call=call,
            decision=approval.decision,
            approver=approval.approver,
            explanation=approval.explanation,
            modified=approval.modified,
        )
    )


def recorded(name: str, approver: Approver) -> Approver:
    """``approver``, answering under ``name`` (when it names no one) and recording its
    decision unless an enclosing recorded approver will."""
    if is_recorded(approver):
        return approver

    @functools.wraps(approver)
    async def decide(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        outermost = not _deciding.get()
        token = _deciding.set(True)
        try:
            approval = await approver(call, messages)
        finally:
            _deciding.reset(token)
        if not isinstance(approval, Approval):
            raise ConfigurationError(
                f"approver {name!r} returned {approval!r}; an approver must return an "
                "Approval(decision=...)"
            )
        if approval.approver is None:
            approval = approval.model_copy(update={"approver": name})
        if outermost:
            record_decision(call, approval)
        return approval

    decide.__loopwright_recorded__ = True  # type: ignore[attr-defined]
    decide.__qualname__ = f"approver[{name}]"
    return decide


def is_recorded(approver: Approver) -> bool:
    """Whether ``approver`` was built by :func:`recorded`."""
    return getattr(approver, "__loopwright_recorded__", False) is True
