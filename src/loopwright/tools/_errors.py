"""Errors of the tool layer: what tools raise, and what the layer raises about tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from .._errors import ConfigurationError, LoopwrightError, StrictSchemaError

if TYPE_CHECKING:
    from ..model import ToolCall, ToolCallErrorType, ToolMessage
    from ._approval import Approval

__all__ = [
    "OutputLimitExceededError",
    "StrictSchemaError",
    "ToolArgumentsError",
    "ToolDeferred",
    "ToolDefinitionError",
    "ToolError",
    "ToolTerminated",
]


class ToolError(LoopwrightError):
    """Raised by a tool to tell the model what went wrong; the run goes on.

    The message is sent to the model as the tool's result (a ``ToolMessage`` with
    ``error.type == "tool_error"``), so write it for the model to act on::

        @tool
        def read_row(index: int) -> str:
            if index >= len(ROWS):
                raise ToolError(f"There are only {len(ROWS)} rows; use 0..{len(ROWS) - 1}.")
            return ROWS[index]

    Subclasses may set :attr:`error_type` to report another kind of failure.
    """

    error_type: ClassVar[ToolCallErrorType] = "tool_error"
    """The ``ToolCallError.type`` the model is shown."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolArgumentsError(ToolError):
    """The arguments of a call do not match the tool's parameters (a ``validation`` error).

    Raised by :meth:`Tool.validate`; ``execute_tools`` reports it to the model.
    """

    error_type: ClassVar[ToolCallErrorType] = "validation"


class OutputLimitExceededError(ToolError):
    """A tool produced more output than it may return (an ``output_limit`` error).

    Raise it from a tool that refuses to return an oversized result (e.g. a file too big
    to read whole); ``truncated_output`` may hold the part that fits.
    """

    error_type: ClassVar[ToolCallErrorType] = "output_limit"

    def __init__(self, message: str, *, truncated_output: str | None = None) -> None:
        super().__init__(message)
        self.truncated_output = truncated_output


class ToolDefinitionError(ConfigurationError):
    """A function cannot be made into a tool (bad name, inexpressible parameter type...)."""


class ToolTerminated(LoopwrightError):
    """An approval policy answered ``terminate``: the run must end.

    Raised by ``execute_tools`` after the other calls of the message finished or were
    cancelled.

    Attributes:
        explanation: Why the policy ended the run.
        call: The tool call that was refused.
        approval: The policy's answer.
        messages: The results of the calls that completed before the run was ended,
            in the order the model asked for them.
    """

    def __init__(
        self,
        explanation: str | None,
        *,
        call: ToolCall,
        approval: Approval | None = None,
        messages: list[ToolMessage] | None = None,
    ) -> None:
        why = f": {explanation}" if explanation else ""
        by = f" ({approval.approver})" if approval is not None and approval.approver else ""
        super().__init__(
            f"The approval policy{by} ended the run at the call of tool {call.function!r} "
            f"(call id {call.id}){why}."
        )
        self.explanation = explanation
        self.call = call
        self.approval = approval
        self.messages: list[ToolMessage] = messages if messages is not None else []


class ToolDeferred(LoopwrightError):
    """An approval policy answered ``defer``: the run must stop and wait for a decision.

    Raised by ``execute_tools`` once the calls running beside the deferred ones (a
    parallel batch) finished; the calls after them in the message are not asked about
    nor run (the model asked for them in order).

    Attributes:
        deferred: The deferred calls with the policies' answers, in the calls' order.
        messages: The results of the calls that completed before the run stopped, in
            the order the model asked for them.
    """

    def __init__(
        self,
        deferred: list[tuple[ToolCall, Approval]],
        messages: list[ToolMessage] | None = None,
    ) -> None:
        names = ", ".join(f"{c.function!r} (call id {c.id})" for c, _ in deferred)
        super().__init__(f"The approval policy deferred the call(s) {names}: waiting for approval.")
        self.deferred = deferred
        self.messages: list[ToolMessage] = messages if messages is not None else []
