"""loopwright: build, run, observe and evaluate LLM agents.

The public API is re-exported here; modules whose names start with ``_`` are private.
Optional integrations (provider SDKs, llama.cpp, the CLI's UI) are imported lazily.
"""

# ruff: noqa: I001  (imports are grouped by part, one section per part)
import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING

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
    Approval,
    ApprovalDecision,
    Approver,
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
    approver,
)
from .tool.builtin import submit, think

# --- protocols (issue 5) -------------------------------------------------------------
from .model.protocols import (
    ActionExample,
    JsonProtocol,
    NativeProtocol,
    ReActProtocol,
    ToolProtocol,
    is_format_error,
    register_protocol,
)

# --- limits, history, agent (issue 4) ------------------------------------------------
from .agent import (
    Agent,
    AgentState,
    Completion,
    ContinueHandler,
    Handoff,
    Hooks,
    IterativeAgent,
    ModelRequest,
    ReactAgent,
    StopRun,
    agent,
    as_tool,
    fork,
    get_agent,
    handoff,
    iterative,
    react,
    registered_agents,
    run,
    run_sync,
)
from .history import (
    HistoryPolicy,
    compact,
    compact_when,
    compose,
    fix_tool_pairs,
    prune,
    prune_when,
    truncate_messages,
    truncate_when,
)
from .limits import (
    DEFAULT_MAX_STEPS,
    Limit,
    LimitExceededError,
    LimitInfo,
    check_limits,
    message_limit,
    remaining_time,
    step_limit,
    time_limit,
    token_limit,
    working_limit,
)

# --- imported on first use (keeps `import loopwright` fast) --------------------------
# store, transcript, log (issue 7); sandbox, approval (issue 8); eval (issue 9).
# Add a name here AND in the TYPE_CHECKING block below (for type checkers); a test
# (tests/test_package.py) checks that the two agree.
_LAZY_BY_MODULE: dict[str, str] = {
    "loopwright.display": "ConsoleDisplay console_display",
    "loopwright.log": (
        "Recording RunInfo RunLog RunStoreError SampleInfo SampleRecording current_recording "
        "export_run import_run list_runs load_run recording"
    ),
    "loopwright.store": "Store StoreError StoreModel store store_as store_context",
    "loopwright.transcript": (
        "ApprovalEvent ErrorEvent Event InfoEvent LimitEvent LoggerEvent ModelEvent SandboxEvent "
        "SpanBegin SpanEnd StoreEvent SubtaskEvent ToolEvent Transcript observe_transcripts span "
        "subtask transcript transcript_context"
    ),
    "loopwright.approval": (
        "ApprovalRule approval_policy auto_approver get_approval_policy human_approver"
    ),
    "loopwright.sandbox": (
        "ExecResult ExecTimeoutError SandboxEnvironment SandboxError SandboxLimits "
        "SandboxUnavailableError max_sandboxes register_sandbox sandbox sandbox_backends "
        "set_max_sandboxes use_sandbox"
    ),
    "loopwright.tool.builtin.bash": "bash",
    "loopwright.tool.builtin.files": "files",
    "loopwright.tool.builtin.python": "python",
    "loopwright.tool.builtin.text_editor": "text_editor",
    "loopwright.eval": (
        "Dataset DatasetError EvalProgress EvalResult FieldSpec Metric RichProgress Sample "
        "SampleResult Score Scorer Task TaskError accuracy as_dataset csv_dataset eval eval_async "
        "get_task includes json_dataset load_tasks match mean model_graded pattern "
        "registered_tasks scorer stderr task"
    ),
    "loopwright.tool.builtin.llm_fallback": "llm_fallback",
}
"""The names loaded on first use, by module (and in the TYPE_CHECKING block below)."""
_LAZY: dict[str, str] = {n: m for m, names in _LAZY_BY_MODULE.items() for n in names.split()}

if TYPE_CHECKING:
    # --- store, transcript, log (issue 7) ------------------------------------------------
    from .display import ConsoleDisplay, console_display
    from .log import (
        Recording,
        RunInfo,
        RunLog,
        RunStoreError,
        SampleInfo,
        SampleRecording,
        current_recording,
        export_run,
        import_run,
        list_runs,
        load_run,
        recording,
    )
    from .store import Store, StoreError, StoreModel, store, store_as, store_context
    from .transcript import (
        ApprovalEvent,
        ErrorEvent,
        Event,
        InfoEvent,
        LimitEvent,
        LoggerEvent,
        ModelEvent,
        SandboxEvent,
        SpanBegin,
        SpanEnd,
        StoreEvent,
        SubtaskEvent,
        ToolEvent,
        Transcript,
        observe_transcripts,
        span,
        subtask,
        transcript,
        transcript_context,
    )

    # --- sandbox, approval (issue 8) -----------------------------------------------------
    from .approval import (
        ApprovalRule,
        approval_policy,
        auto_approver,
        get_approval_policy,
        human_approver,
    )
    from .sandbox import (
        ExecResult,
        ExecTimeoutError,
        SandboxEnvironment,
        SandboxError,
        SandboxLimits,
        SandboxUnavailableError,
        max_sandboxes,
        register_sandbox,
        sandbox,
        sandbox_backends,
        set_max_sandboxes,
        use_sandbox,
    )
    from .tool.builtin.bash import bash
    from .tool.builtin.files import files
    from .tool.builtin.python import python
    from .tool.builtin.text_editor import text_editor

    # --- eval (issue 9) ------------------------------------------------------------------
    from .eval import (
        Dataset,
        DatasetError,
        EvalProgress,
        EvalResult,
        FieldSpec,
        Metric,
        RichProgress,
        Sample,
        SampleResult,
        Score,
        Scorer,
        Task,
        TaskError,
        accuracy,
        as_dataset,
        csv_dataset,
        eval,
        eval_async,
        get_task,
        includes,
        json_dataset,
        load_tasks,
        match,
        mean,
        model_graded,
        pattern,
        registered_tasks,
        scorer,
        stderr,
        task,
    )

    from .tool.builtin.llm_fallback import llm_fallback

__version__ = "0.1.0"

# Functions named like their modules (``store``, ``sandbox``, ``eval``): importing the
# module must not replace the function on the package, as the import system would.
_SHADOWED = frozenset(n for n, m in _LAZY.items() if m.rsplit(".", 1)[-1] == n)


class _Package(_types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwright' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The public API only: not the helper modules, the subpackages or private names.
    return sorted(__all__)


_sys.modules[__name__].__class__ = _Package

# The public names, sorted as ruff sorts them, several to a line (kept so by fmt: off).
# fmt: off
__all__ = [
    "DEFAULT_MAX_STEPS", "ActionExample", "Agent", "AgentState", "Approval", "ApprovalDecision",
    "ApprovalEvent", "ApprovalRule", "Approver", "AssistantMessage", "ChatMessage", "Completion",
    "ConfigurationError", "ConsoleDisplay", "ContinueHandler", "Dataset", "DatasetError",
    "ErrorEvent", "EvalProgress", "EvalResult", "Event", "ExecResult", "ExecTimeoutError",
    "FieldSpec", "GenerateConfig", "Handoff", "HistoryPolicy", "Hooks", "InfoEvent",
    "IterativeAgent", "JsonProtocol", "Limit", "LimitEvent", "LimitExceededError", "LimitInfo",
    "LoggerEvent", "LoopwrightError", "Metric", "MissingCredentialsError", "MissingDependencyError",
    "Model", "ModelAPI", "ModelAPIError", "ModelCall", "ModelError", "ModelEvent", "ModelHook",
    "ModelOutput", "ModelRequest", "ModelTimeoutError", "NativeProtocol",
    "OutputLimitExceededError", "ProviderNotFoundError", "ReActProtocol", "ReactAgent", "Recording",
    "RetryDecision", "RichProgress", "RunInfo", "RunLog", "RunStoreError", "Sample", "SampleInfo",
    "SampleRecording", "SampleResult", "SandboxEnvironment", "SandboxError", "SandboxEvent",
    "SandboxLimits", "SandboxUnavailableError", "Score", "Scorer", "ScriptExhaustedError",
    "SpanBegin", "SpanEnd", "StopReason", "StopRun", "Store", "StoreError", "StoreEvent",
    "StoreModel", "StrictSchemaError", "SubtaskEvent", "SystemMessage", "Task", "TaskError", "Tool",
    "ToolArgumentsError", "ToolCall", "ToolCallError", "ToolChoice", "ToolDefinitionError",
    "ToolError", "ToolEvent", "ToolExecution", "ToolFunction", "ToolHook", "ToolInfo",
    "ToolMessage", "ToolProtocol", "ToolTerminated", "Transcript", "Usage", "UserMessage",
    "__version__", "accuracy", "agent", "approval_policy", "approver", "as_dataset", "as_tool",
    "auto_approver", "bash", "check_limits", "compact", "compact_when", "compose",
    "console_display", "csv_dataset", "current_recording", "default_model", "eval", "eval_async",
    "execute_tools", "export_run", "files", "fix_tool_pairs", "fork", "get_agent",
    "get_approval_policy", "get_model", "get_task", "handoff", "human_approver", "import_run",
    "includes", "is_format_error", "iterative", "json_dataset", "list_runs", "llm_fallback",
    "load_run", "load_tasks", "match", "max_sandboxes", "mean", "message_limit", "model_graded",
    "model_hook", "observe_transcripts", "pattern", "provider_names", "prune", "prune_when",
    "python", "react", "recording", "register_protocol", "register_provider", "register_sandbox",
    "registered_agents", "registered_tasks", "remaining_time", "run", "run_sync", "sandbox",
    "sandbox_backends", "scorer", "set_max_sandboxes", "span", "stderr", "step_limit", "store",
    "store_as", "store_context", "strict_schema", "submit", "subtask", "task", "text_editor",
    "think", "time_limit", "token_limit", "tool", "tool_hook", "tool_with", "transcript",
    "transcript_context", "truncate_messages", "truncate_output", "truncate_when", "use_sandbox",
    "working_limit",
]
# fmt: on
