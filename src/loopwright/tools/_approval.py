"""The contract between tool execution and approval policies.

``execute_tools`` asks the current :data:`Approver` (if any) about each tool call before
it runs. Policies live in :mod:`loopwright.approval`; this module only says what they
receive and answer, so that the tool layer does not depend on them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from ..model import ChatMessage, ToolCall

__all__ = ["Approval", "ApprovalDecision", "Approver", "approver", "current_approver"]

ApprovalDecision: TypeAlias = Literal["approve", "modify", "reject", "escalate", "terminate"]
"""- ``approve``: run the call as it is;
- ``modify``: run ``Approval.modified`` instead;
- ``reject``: do not run it; the model is told ``Approval.explanation``;
- ``escalate``: this policy does not decide; ask the next one (if none is left, reject);
- ``terminate``: do not run it, and end the run.
"""


class Approval(BaseModel):
    """A policy's answer about one tool call."""

    model_config = ConfigDict(defer_build=True)

    decision: ApprovalDecision
    modified: ToolCall | None = None
    """The call to run instead, with ``decision="modify"``."""
    explanation: str | None = None
    """Why; shown to the model on reject and recorded in the transcript."""
    approver: str | None = None
    """The name of the policy that decided."""


Approver: TypeAlias = Callable[[ToolCall, Sequence[ChatMessage]], Awaitable[Approval]]
"""``await approver(call, messages) -> Approval``: decides about one call, seeing the
conversation so far."""

_current: ContextVar[Approver | None] = ContextVar("loopwright_approver", default=None)


def current_approver() -> Approver | None:
    """The approver in force in this context, or ``None`` (every call is approved)."""
    return _current.get()


@contextlib.contextmanager
def approver(policy: Approver | None) -> Iterator[None]:
    """Make ``policy`` decide about every tool call executed in this context."""
    token = _current.set(policy)
    try:
        yield
    finally:
        _current.reset(token)
