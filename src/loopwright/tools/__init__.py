"""Tools: ``@tool``, schemas from signatures, validation, and safe parallel execution.

See :func:`tool`, :class:`Tool`, :func:`execute_tools` and :func:`truncate_output`.
"""

from ._approval import (
    Approval,
    ApprovalDecision,
    Approver,
    PendingCall,
    approver,
    arguments_hash,
    current_approver,
)
from ._errors import (
    OutputLimitExceededError,
    StrictSchemaError,
    ToolArgumentsError,
    ToolDeferred,
    ToolDefinitionError,
    ToolError,
    ToolTerminated,
)
from ._execute import DEFAULT_MAX_PARALLEL, execute_tools
from ._hooks import ToolExecution, ToolHook, current_tool_hooks, tool_hook
from ._output import result_text, truncate_output
from ._strict import strict_schema
from ._tool import Tool, tool
from ._tool_with import tool_with

__all__ = [
    "DEFAULT_MAX_PARALLEL",
    "Approval",
    "ApprovalDecision",
    "Approver",
    "OutputLimitExceededError",
    "PendingCall",
    "StrictSchemaError",
    "Tool",
    "ToolArgumentsError",
    "ToolDeferred",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecution",
    "ToolHook",
    "ToolTerminated",
    "approver",
    "arguments_hash",
    "current_approver",
    "current_tool_hooks",
    "execute_tools",
    "result_text",
    "strict_schema",
    "tool",
    "tool_hook",
    "tool_with",
    "truncate_output",
]
