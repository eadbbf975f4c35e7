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

__all__ = [
    "Approval",
    "ApprovalDecision",
    "Approver",
    "PendingCall",
    "approver",
    "arguments_hash",
    "current_approver",
]

ApprovalDecision: TypeAlias = Literal[
    "approve", "modify", "reject", "escalate", "terminate", "defer"
]
"""- ``approve``: run the call as it is;
- ``modify``: run ``Approval.modified`` instead;
- ``reject``: do not run it; the model is told ``Approval.explanation``;
- ``escalate``: this policy does not decide; ask the next one (if none is left, reject);
- ``terminate``: do not run it, and end the run;
- ``defer``: do not run it yet: the run stops, waiting for a person's decision, which
  may come later from another process (``lw.approve``, ``loopwright runs approve``).
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


class PendingCall(BaseModel):
    """A call an approval policy deferred: the run waits for a decision about it."""

    model_config = ConfigDict(defer_build=True)

    call: ToolCall
    """The call as the model asked for it (its ``id``, ``function`` and ``arguments``)."""
    approver: str | None = None
    """The policy that deferred it."""
    explanation: str | None = None
    """Why the policy deferred it."""

    @property
    def arguments_hash(self) -> str:
        """The hash a decision about this call is checked against (:func:`arguments_hash`)."""
        return arguments_hash(self.call)


def arguments_hash(call: ToolCall) -> str:
    """SHA-256 of the call's tool name and canonical arguments (JSON, keys sorted), with
    the secrets learnt redacted as the run store keeps them (``model/_redact.py``): a
    decision recorded for one hash applies to a call with the same name and arguments
    only, and to the call as read back from the store (a continuation's)."""
    import hashlib
    import json

    from pydantic_core import to_jsonable_python

    from ..model._redact import redact_known

    # (as stored: a float that is not finite as null)
    arguments = to_jsonable_python(call.arguments, inf_nan_mode="null", fallback=repr)
    text = json.dumps(
        [call.function, arguments],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=repr,
    )
    return hashlib.sha256(redact_known(text).encode("utf-8", "surrogatepass")).hexdigest()


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
