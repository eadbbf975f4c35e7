"""``auto_approver``: the same answer for every call."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import ChatMessage, ToolCall
from ..tool._approval import Approval, ApprovalDecision, Approver
from ._record import recorded

__all__ = ["auto_approver"]


def auto_approver(
    decision: ApprovalDecision = "approve", explanation: str | None = None
) -> Approver:
    """An approver that gives every call the same answer.

    Args:
        decision: ``approve`` (the default), ``reject``, ``escalate`` or ``terminate``
            (``modify`` needs a call to run instead, so it is not allowed here).
        explanation: Why (shown to the model on ``reject``).
    """
    if decision == "modify":
        from .._errors import ConfigurationError

        raise ConfigurationError(
            "auto_approver cannot 'modify' (it has no call to run instead); write an "
            "approver that returns Approval(decision='modify', modified=...)"
        )

    async def auto(call: ToolCall, messages: Sequence[ChatMessage]) -> Approval:
        return Approval(decision=decision, explanation=explanation, approver="auto")

    return recorded("auto", auto)
