"""The scripted model: replays outputs you give it, for tests and demos.

    model = get_model("mock", outputs=[
        ModelOutput.for_tool_call("multiply", {"a": 2, "b": 3}),
        "The answer is 6.",
    ])

Outputs may be :class:`ModelOutput`\\ s, reply texts or exceptions, or a callable that
computes each reply: :class:`MockModelAPI` says how each is used. Its token usage is
estimated by ``_mock_usage``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeAlias

from ..._errors import ConfigurationError, ScriptExhaustedError
from ..._ids import new_id
from .._api import ModelAPI
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput
from ._mock_usage import UsageEstimate

__all__ = ["MockModelAPI", "MockOutputs"]

ScriptItem: TypeAlias = ModelOutput | str | BaseException
Responder: TypeAlias = Callable[
    [Sequence[ChatMessage], Sequence[ToolInfo], GenerateConfig],
    ModelOutput | str | Awaitable[ModelOutput | str],
]
MockOutputs: TypeAlias = Sequence[ScriptItem] | Responder

DEFAULT_TEXT = "Default output from the mock model."


def copy_arguments(value: Any) -> Any:
    """A deep copy of a call's arguments made without recursion (scripted arguments may
    nest deeper than ``copy.deepcopy`` can go): each dict and list is copied; other
    values are deep-copied."""
    if not isinstance(value, dict | list):
        return copy.deepcopy(value)
    top = dict(value) if isinstance(value, dict) else list(value)
    stack = [top]  # copies whose values are still the originals
    while stack:
        node = stack.pop()
        for k, v in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(v, dict | list):
                node[k] = new = dict(v) if isinstance(v, dict) else list(v)
                stack.append(new)
            else:
                node[k] = copy.deepcopy(v)
    return top


def _fresh_copy(item: ModelOutput, *, new_ids: bool) -> ModelOutput:
    """A copy of a scripted output that shares nothing mutable with it (the loop sets
    fields of the output, tools may change the arguments); with ``new_ids``, the
    message and its calls get fresh ids (an output used again must not repeat them)."""
    calls = []
    for call in item.message.tool_calls:
        update: dict[str, Any] = {"arguments": copy_arguments(call.arguments)}
        if new_ids:
            update["id"] = new_id()
        calls.append(call.model_copy(update=update))
    update = {"tool_calls": calls, "id": new_id() if new_ids else item.message.id}
    message = item.message.model_copy(update=update)
    usage = replace(item.usage) if item.usage is not None else None
    return replace(item, message=message, usage=usage)


def _as_output(item: ModelOutput | str, where: str) -> ModelOutput:
    if isinstance(item, ModelOutput):
        return _fresh_copy(item, new_ids=False)
    if isinstance(item, str):
        return ModelOutput.from_text(item)
    raise ConfigurationError(
        f"mock model: {where} is a {type(item).__name__}; expected a ModelOutput or a str"
    )


class MockModelAPI(ModelAPI):
    """A scripted model: each call answers with the next output of the script.

    ``get_model("mock", outputs=[...])`` makes one. Each item of ``outputs`` is one of:

    - a :class:`ModelOutput`, returned as it is (a fresh copy each time):
      ``ModelOutput.for_tool_call("multiply", {"a": 2, "b": 3})`` calls a tool,
      ``ModelOutput.from_text("6")`` answers;
    - a ``str``: the reply's text. Natively that is a plain answer; with
      ``tool_protocol="react"`` or ``"json"`` it is parsed like a real model's reply
      (``'Action: multiply\\nAction Input: {"a": 2, "b": 3}'``);
    - an exception, raised when reached (to script a provider failure).

    Or ``outputs`` is a callable ``(messages, tools, config) -> ModelOutput | str`` (sync
    or async) that computes each reply. When the script runs out the next call raises
    :class:`ScriptExhaustedError`, unless ``repeat=True``. An output without ``usage``
    gets an estimate (about four characters a token); one with tool calls and
    ``stop_reason="stop"`` gets ``"tool_calls"``.
    """

    provider = "mock"
    supports_tools = True

    def __init__(
        self,
        model_name: str = "",
        outputs: MockOutputs | None = None,
        *,
        repeat: bool = False,
    ) -> None:
        """
        Args:
            model_name: Any name (``mock/anything``); it only labels outputs.
            outputs: The script, or a responder callable. ``None`` answers
                ``DEFAULT_TEXT`` forever.
            repeat: Start the script again from the top when it runs out, instead of
                raising :class:`ScriptExhaustedError`.
        """
        self.model_name = model_name
        self._responder: Responder | None = None
        self._script: list[ScriptItem] = []
        self._repeat = repeat
        self._next = 0
        self._served: set[int] = set()
        self._usage = UsageEstimate()  # counts only new messages per call
        if outputs is None:
            self._script, self._repeat = [DEFAULT_TEXT], True
        elif callable(outputs):
            self._responder = outputs
        elif isinstance(outputs, (str, bytes)) or not isinstance(outputs, Sequence):
            raise ConfigurationError(
                "mock model: outputs must be a list of ModelOutput/str/exception items or a "
                f"callable, got {type(outputs).__name__}"
            )
        else:
            if not outputs:
                raise ConfigurationError(
                    "mock model: outputs is empty; give at least one output (or omit it "
                    "for a default reply)"
                )
            for i, item in enumerate(outputs):
                if not isinstance(item, (ModelOutput, str, BaseException)):
                    raise ConfigurationError(
                        f"mock model: outputs[{i}] is a {type(item).__name__}; expected a "
                        "ModelOutput, a str, or an exception to raise"
                    )
            self._script = list(outputs)

    @property
    def remaining(self) -> int | None:
        """Scripted outputs not yet used (``None`` for a responder or a repeating script)."""
        if self._responder is not None or self._repeat:
            return None
        return len(self._script) - self._next

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ModelOutput:
        if self._responder is not None:
            result = self._responder(messages, tools, config)
            if inspect.isawaitable(result):
                result = await result
            output = _as_output(result, "the responder's return value")
        else:
            if self._next >= len(self._script):
                if not self._repeat:
                    raise ScriptExhaustedError(
                        f"mock model: the script ran out after {len(self._script)} outputs; "
                        "the agent asked for one more. Add outputs to the script (or pass "
                        "repeat=True)"
                    )
                self._next = 0
            item = self._script[self._next]
            self._next += 1
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, ModelOutput):
                # the same scripted object may come again: fresh ids from its second use
                output = _fresh_copy(item, new_ids=id(item) in self._served)
                self._served.add(id(item))
            else:
                output = ModelOutput.from_text(item)
        if output.message.tool_calls and output.stop_reason == "stop":
            output.stop_reason = "tool_calls"
        if output.usage is None:
            output.usage = self._usage.usage(messages, output.message)
        return output
