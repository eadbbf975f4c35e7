"""loopwright: build, run, observe and evaluate LLM agents.

The public API is re-exported here; modules whose names start with ``_`` are private.
Optional integrations (provider SDKs, llama.cpp, the CLI's UI) are imported lazily.
"""

from ._errors import (
    ConfigurationError,
    LoopwrightError,
    MissingCredentialsError,
    MissingDependencyError,
    ModelAPIError,
    ModelError,
    ModelTimeoutError,
    ProviderNotFoundError,
    ScriptExhaustedError,
)

# --- model -------------------------------------------------------------------------
from .model import (
    AssistantMessage,
    ChatMessage,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelCall,
    ModelHook,
    ModelOutput,
    RetryDecision,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolCallError,
    ToolChoice,
    ToolFunction,
    ToolInfo,
    ToolMessage,
    Usage,
    UserMessage,
    default_model,
    get_model,
    model_hook,
    provider_names,
    register_provider,
)

# --- tool (issue 3) ------------------------------------------------------------------
from .tool import (
    OutputLimitExceededError,
    StrictSchemaError,
    Tool,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolError,
    ToolExecution,
    ToolHook,
    ToolTerminated,
    execute_tools,
    strict_schema,
    tool,
    tool_hook,
    tool_with,
    truncate_output,
)
from .tool.builtin import finish, submit, submit_tool, think

# --- protocols (issue 5) -------------------------------------------------------------
# --- limits, history, agent (issue 4) ------------------------------------------------
# --- store, transcript, log (issue 7) ------------------------------------------------
# --- sandbox, approval (issue 8) -----------------------------------------------------
# --- eval (issue 9) ------------------------------------------------------------------

__version__ = "0.1.0"

__all__ = [
    "AssistantMessage",
    "ChatMessage",
    "ConfigurationError",
    "GenerateConfig",
    "LoopwrightError",
    "MissingCredentialsError",
    "MissingDependencyError",
    "Model",
    "ModelAPI",
    "ModelAPIError",
    "ModelCall",
    "ModelError",
    "ModelHook",
    "ModelOutput",
    "ModelTimeoutError",
    "OutputLimitExceededError",
    "ProviderNotFoundError",
    "RetryDecision",
    "ScriptExhaustedError",
    "StopReason",
    "StrictSchemaError",
    "SystemMessage",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallError",
    "ToolChoice",
    "ToolDefinitionError",
    "ToolError",
    "ToolExecution",
    "ToolFunction",
    "ToolHook",
    "ToolInfo",
    "ToolMessage",
    "ToolTerminated",
    "Usage",
    "UserMessage",
    "__version__",
    "default_model",
    "execute_tools",
    "finish",
    "get_model",
    "model_hook",
    "provider_names",
    "register_provider",
    "strict_schema",
    "submit",
    "submit_tool",
    "think",
    "tool",
    "tool_hook",
    "tool_with",
    "truncate_output",
]
