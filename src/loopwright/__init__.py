"""loopwright: build, run, observe and evaluate LLM agents.

The public API is re-exported here; modules whose names start with ``_`` are private.
Optional integrations (provider SDKs, llama.cpp, the CLI's UI) are imported lazily.
"""

# ruff: noqa: I001  (imports are grouped by part, one section per part)
import functools as _functools
import importlib as _importlib
from pathlib import Path as _Path
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

# --- imported on first use (keeps `import loopwright` fast) --------------------------
# The TYPE_CHECKING block below is the one table of these names: type checkers read it,
# and `__getattr__` reads it (once, on the first lazy name asked for) to know which
# module to import. Add a name there and to `__all__`.
if TYPE_CHECKING:
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
    from .tools import (
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
    from .tools.builtin import submit, think

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
    from .agents import (
        Agent,
        AgentState,
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
        cost_limit,
        message_limit,
        remaining_time,
        step_limit,
        time_limit,
        token_limit,
        working_limit,
    )

    # --- store, transcript, log (issue 7) ------------------------------------------------
    from .display import ConsoleDisplay, console_display
    from .log import (
        RunInfo,
        RunLog,
        RunStoreError,
        SampleInfo,
        export_run,
        import_run,
        list_runs,
        load_run,
    )
    from .runtime import (
        RunScope,
        RunStream,
        current_recording,
        recording,
        run,
        run_stream,
        run_sync,
        write_tool_spec,
    )
    from .stores import Store, StoreError, StoreModel, store, store_as, store_context
    from .transcripts import (
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
    from .sandboxes import (
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
    from .tools.builtin import bash, files, python, text_editor

    # --- eval (issue 9) ------------------------------------------------------------------
    from .evals import (
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

    from .tools.builtin import llm_fallback

    # --- added by later merges (streaming, prices, diffs, rollouts) ----------------------
    from .agents import (
        Ending,
        ModelReplied,
        Recovery,
        RunFinished,
        StepFinished,
        StreamEvent,
        ToolCallFinished,
        ToolCallStarted,
    )
    from .evals import result_match, rollouts, rollouts_async
    from .log import RunDiff, diff_runs

    # --- replay (issue 23) -----------------------------------------------------------------
    from .runtime import ReplayDivergence, ReplayResult, replay
    from .model import (
        Price,
        ReasoningDelta,
        StreamCutError,
        TextDelta,
        cost_of,
        price_of,
        set_price,
    )

    # --- mcp (issue 20) ------------------------------------------------------------------
    from .mcp import MCPServer, MCPServerError, mcp_app, mcp_server, serve_mcp, with_mcp

    # --- resume (issue 21) ---------------------------------------------------------------
    from .runtime import resume

    # --- deferred approval (issue 21) ----------------------------------------------------
    from .approval import defer_approval
    from .runtime import ApprovalRefused, approve, pending_calls
    from .tools import PendingCall, ToolDeferred

__version__ = "0.1.0"


@_functools.cache
def _lazy_table() -> dict[str, str]:
    """Lazy name -> module, read from this file's TYPE_CHECKING block."""
    import ast

    tree = ast.parse(_Path(__file__).read_text(encoding="utf-8"))
    [block] = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    return {
        alias.asname or alias.name: f"{__name__}.{node.module}"
        for node in ast.walk(block)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def __getattr__(name: str) -> object:
    module = _lazy_table().get(name) if not name.startswith("__") else None
    if module is None:
        raise AttributeError(f"module 'loopwright' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The public API only: not the helper modules, the subpackages or private names.
    return sorted(__all__)


# The public names, sorted as ruff sorts them, several to a line (kept so by fmt: off).
# fmt: off
__all__ = [
    "DEFAULT_MAX_STEPS", "ActionExample", "Agent", "AgentState", "Approval", "ApprovalDecision",
    "ApprovalEvent", "ApprovalRefused", "ApprovalRule", "Approver", "AssistantMessage",
    "ChatMessage", "ConfigurationError", "ConsoleDisplay", "ContinueHandler", "Dataset",
    "DatasetError", "Ending", "ErrorEvent", "EvalProgress", "EvalResult", "Event", "ExecResult",
    "ExecTimeoutError", "FieldSpec", "GenerateConfig", "Handoff", "HistoryPolicy", "Hooks",
    "InfoEvent", "IterativeAgent", "JsonProtocol", "Limit", "LimitEvent", "LimitExceededError",
    "LimitInfo", "LoggerEvent", "LoopwrightError", "MCPServer", "MCPServerError", "Metric",
    "MissingCredentialsError", "MissingDependencyError", "Model", "ModelAPI", "ModelAPIError",
    "ModelCall", "ModelError", "ModelEvent", "ModelHook", "ModelOutput", "ModelReplied",
    "ModelRequest", "ModelTimeoutError", "NativeProtocol", "OutputLimitExceededError",
    "PendingCall", "Price", "ProviderNotFoundError", "ReActProtocol", "ReactAgent",
    "ReasoningDelta", "Recovery", "ReplayDivergence", "ReplayResult", "RetryDecision",
    "RichProgress", "RunDiff", "RunFinished", "RunInfo", "RunLog", "RunScope", "RunStoreError",
    "RunStream", "Sample", "SampleInfo", "SampleResult", "SandboxEnvironment", "SandboxError",
    "SandboxEvent", "SandboxLimits", "SandboxUnavailableError", "Score", "Scorer",
    "ScriptExhaustedError", "SpanBegin", "SpanEnd", "StepFinished", "StopReason", "StopRun",
    "Store", "StoreError", "StoreEvent", "StoreModel", "StreamCutError", "StreamEvent",
    "StrictSchemaError", "SubtaskEvent", "SystemMessage", "Task", "TaskError", "TextDelta", "Tool",
    "ToolArgumentsError", "ToolCall", "ToolCallError", "ToolCallFinished", "ToolCallStarted",
    "ToolChoice", "ToolDeferred", "ToolDefinitionError", "ToolError", "ToolEvent", "ToolExecution",
    "ToolFunction", "ToolHook", "ToolInfo", "ToolMessage", "ToolProtocol", "ToolTerminated",
    "Transcript", "Usage", "UserMessage", "__version__", "accuracy", "agent", "approval_policy",
    "approve", "approver", "as_dataset", "as_tool", "auto_approver", "bash", "check_limits",
    "compact", "compact_when", "compose", "console_display", "cost_limit", "cost_of", "csv_dataset",
    "current_recording", "default_model", "defer_approval", "diff_runs", "eval", "eval_async",
    "execute_tools", "export_run", "files", "fix_tool_pairs", "fork", "get_agent",
    "get_approval_policy", "get_model", "get_task", "handoff", "human_approver", "import_run",
    "includes", "is_format_error", "iterative", "json_dataset", "list_runs", "llm_fallback",
    "load_run", "load_tasks", "match", "max_sandboxes", "mcp_app", "mcp_server", "mean",
    "message_limit", "model_graded", "model_hook", "observe_transcripts", "pattern",
    "pending_calls", "price_of", "provider_names", "prune", "prune_when", "python", "react",
    "recording", "register_protocol", "register_provider", "register_sandbox", "registered_agents",
    "registered_tasks", "remaining_time", "replay", "result_match", "resume", "rollouts",
    "rollouts_async", "run", "run_stream", "run_sync", "sandbox", "sandbox_backends", "scorer",
    "serve_mcp", "set_max_sandboxes", "set_price", "span", "stderr", "step_limit", "store",
    "store_as", "store_context", "strict_schema", "submit", "subtask", "task", "text_editor",
    "think", "time_limit", "token_limit", "tool", "tool_hook", "tool_with", "transcript",
    "transcript_context", "truncate_messages", "truncate_output", "truncate_when", "use_sandbox",
    "with_mcp", "working_limit", "write_tool_spec",
]
# fmt: on
