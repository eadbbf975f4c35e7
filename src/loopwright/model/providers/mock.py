"""The scripted model: replays outputs you give it, for tests and demos.

    model = get_model("mock", outputs=[
        ModelOutput.for_tool_call("multiply", {"a": 2, "b": 3}),
        "The answer is 6.",
    ])

Outputs may be :class:`ModelOutput`\\ s, strings (plain text answers) or exceptions
(raised when reached, to script provider failures). Or pass a callable
``(messages, tools, config) -> ModelOutput | str`` (sync or async) to compute each reply.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from ..._errors import ConfigurationError, ScriptExhaustedError
from ..._fast import copy_model, set_fields
from ..._ids import new_id
from .._api import ModelAPI
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput, Usage

__all__ = ["MockModelAPI", "MockOutputs"]

ScriptItem: TypeAlias = ModelOutput | str | BaseException
Responder: TypeAlias = Callable[
    [Sequence[ChatMessage], Sequence[ToolInfo], GenerateConfig],
    ModelOutput | str | Awaitable[ModelOutput | str],
]
MockOutputs: TypeAlias = Sequence[ScriptItem] | Responder

DEFAULT_TEXT = "Default output from the mock model."


def _repr_size(value: Any) -> int:
    """``len(repr(value))`` for JSON-like data, counted without recursion (scripted
    arguments may nest deeper than the stack allows)."""
    size, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            size += 4 * len(v) or 2  # braces, ": " per item, ", " between items
            stack += v.keys()
            stack += v.values()
        elif isinstance(v, list):
            size += 2 * len(v) or 2  # brackets, ", " between items
            stack += v
        else:
            size += len(repr(v))
    return size


def _message_tokens(message: ChatMessage) -> int:
    # about four characters a token (so at least one for any text), plus a few per part
    tokens = 4 + (len(message.content) + 3) // 4
    if message.role == "assistant":
        for call in message.tool_calls:
            size = _repr_size(call.arguments)  # close enough to the JSON for an estimate
            tokens += 4 + (len(call.function) + 3) // 4 + (size + 3) // 4
    return tokens


def _copy_value(value: Any) -> Any:
    """A copy of tool arguments that shares no dict or list with them (JSON's mutable
    values; anything else is shared), without recursion: scripted arguments may nest
    deeper than the stack allows. Each dict and list is copied once, in C."""
    if not isinstance(value, dict | list):
        return value
    top = dict(value) if isinstance(value, dict) else list(value)
    stack = [top]  # copies whose dicts and lists are still the originals
    while stack:
        node = stack.pop()
        for k, v in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(v, dict | list):
                node[k] = new = dict(v) if isinstance(v, dict) else list(v)
                stack.append(new)
    return top


def _copy_output(item: ModelOutput) -> ModelOutput:
    """A copy of ``item`` that shares nothing mutable with it.

    The loop and ``Model`` set fields of the output, its message and (on replays) the
    calls' ids; tools may get the arguments. Every model object, dict and list is copied;
    strings and numbers are shared. (A generic deep copy cost more than the rest of an
    agent step.)
    """
    message = item.message
    calls = [copy_model(c, arguments=_copy_value(c.arguments)) for c in message.tool_calls]
    if item.usage is None:
        return copy_model(item, message=copy_model(message, tool_calls=calls))
    return copy_model(
        item, message=copy_model(message, tool_calls=calls), usage=copy_model(item.usage)
    )


def _as_output(item: ModelOutput | str, where: str, *, reused: bool = False) -> ModelOutput:
    if isinstance(item, ModelOutput):
        # the same scripted object may be replayed: hand out copies, never the original;
        # a replayed copy gets fresh message and tool-call ids (ids must stay unique)
        output = _copy_output(item)
        if reused:
            set_fields(output.message, id=new_id())
            for call in output.message.tool_calls:
                set_fields(call, id=new_id())
        return output
    if isinstance(item, str):
        return ModelOutput.from_text(item)
    raise ConfigurationError(
        f"mock model: {where} is a {type(item).__name__}; expected a ModelOutput or a str"
    )


class MockModelAPI(ModelAPI):
    """A scripted model. See the module documentation."""

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
        # (first message id, count, id of last counted message, tokens): input tokens are
        # counted for new messages only, so usage costs O(new) per call, not O(history).
        self._prefix: tuple[str, int, str, int] | None = None
        # the last output's message and its tokens: it comes back as the next input
        self._last_output: tuple[ChatMessage, int] | None = None
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
            reused = id(item) in self._served
            self._served.add(id(item))
            output = _as_output(item, f"outputs[{self._next - 1}]", reused=reused)
        values: dict[str, Any] = {}
        if output.message.tool_calls and output.stop_reason == "stop":
            values["stop_reason"] = "tool_calls"
        if output.usage is None:
            values["usage"] = self._usage(messages, output)
        if values:
            set_fields(output, **values)
        return output

    def _usage(self, messages: Sequence[ChatMessage], output: ModelOutput) -> Usage:
        n = len(messages)
        start, tokens = 0, 0
        p = self._prefix
        if p and n >= p[1] and p[1] and messages[0].id == p[0] and messages[p[1] - 1].id == p[2]:
            start, tokens = p[1], p[3]
        last = self._last_output
        for m in messages[start:]:
            tokens += last[1] if last is not None and m is last[0] else _message_tokens(m)
        if n:
            self._prefix = (messages[0].id, n, messages[n - 1].id, tokens)
        out_tokens = _message_tokens(output.message)
        self._last_output = (output.message, out_tokens)
        return Usage(
            input_tokens=tokens, output_tokens=out_tokens, total_tokens=tokens + out_tokens
        )
