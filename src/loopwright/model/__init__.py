"""The model layer: messages, outputs, configs, ``Model`` and the provider registry."""

from ._api import ModelAPI, RetryDecision
from ._chat import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    ToolCall,
    ToolCallError,
    ToolCallErrorType,
    ToolInfo,
    ToolMessage,
    UserMessage,
)
from ._config import DEFAULT_MAX_TOOL_OUTPUT, GenerateConfig, ToolChoice, ToolFunction
from ._model import DEFAULT_CONFIG, Model, ModelCall, ModelHook, model_hook
from ._output import ModelOutput, StopReason, Usage, output_from_data, usage_from_json
from ._prices import Price, cost_of, price_of, set_price
from ._registry import (
    ENTRY_POINT_GROUP,
    ProviderFactory,
    default_model,
    get_model,
    provider_names,
    register_provider,
)
from ._stream import ReasoningDelta, StreamCutError, TextDelta

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_MAX_TOOL_OUTPUT",
    "ENTRY_POINT_GROUP",
    "AssistantMessage",
    "ChatMessage",
    "GenerateConfig",
    "Model",
    "ModelAPI",
    "ModelCall",
    "ModelHook",
    "ModelOutput",
    "Price",
    "ProviderFactory",
    "ReasoningDelta",
    "RetryDecision",
    "StopReason",
    "StreamCutError",
    "SystemMessage",
    "TextDelta",
    "ToolCall",
    "ToolCallError",
    "ToolCallErrorType",
    "ToolChoice",
    "ToolFunction",
    "ToolInfo",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "cost_of",
    "default_model",
    "get_model",
    "model_hook",
    "output_from_data",
    "price_of",
    "provider_names",
    "register_provider",
    "set_price",
    "usage_from_json",
]
