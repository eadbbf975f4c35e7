"""``auto_approver``: the same answer for every call."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import ChatMessage, ToolCall
from ..tools._approval import Approval, ApprovalDecision, Approver
from ._record import recorded

__all__ = ["auto_approver"]


def auto_approver(
    decision: ApprovalDecision = "approve", explanation: str | None = None
) -> Approver:
    """An approver that gives every call the same answer.

    Args:
        decision: ``approve`` (the default), ``reject``, ``escalate``, ``terminate`` or
            ``defer``
            (``modify`` needs a call to run instead, so it is not allowed here).
        explanation: Why (shown to the model on ``reject``).
    """
    from .._errors import ConfigurationError

    if decision == "modify":
        raise ConfigurationError(
            "auto_approver cannot 'modify' (it has no call to run instead); write an "
            "approver that returns Approval(decision='modify', modified=...)"
        )
    if decision not in ("approve", "reject", "escalate", "terminate", "defer"):
        raise ConfigurationError(
            f"auto_approver: unknown decision {decision!r}; use approve, reject, escalate, "
            "terminate or defer"
        )
    answer = Approval(decision=decision, explanation=explanation, approver="auto")

    async def auto(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        return answer.model_copy()

    return recorded("auto", auto)
