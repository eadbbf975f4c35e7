"""Typed results: ``react(..., output=MyType)`` makes the final answer an instance of it.

The type (a pydantic model, a dataclass, a ``TypedDict``, or a plain type such as
``int`` or ``list[str]``) becomes the ``answer`` parameter of the agent's ``submit``
tool, so the answer travels the way each model gives tool arguments:

- native tool calling: as the submit call's arguments (with the openai provider's
  ``strict_tools=True``, the server holds them to the schema);
- the ``json`` protocol: as the ``finish`` action's arguments, which the request's
  JSON-schema response format constrains, and on the embedded model, the llama.cpp
  grammar made from it;
- the ``react`` protocol: the prompt shows the tool's schema and ``Final Answer:``
  is parsed as JSON.

The tool layer validates the answer like any tool's arguments: an answer that does not
validate goes back to the model with pydantic's errors, as the call's error. After
``max_output_retries`` such answers in one run of the agent, the run ends with
:class:`~loopwright.StopRun` (``state.completed == "stopped"``; ``state.error`` says
which type failed and why). A valid answer ends the agent: ``state.output`` keeps the
model's output (its text is the answer as JSON) and ``state.result`` holds the
validated value.

A type that has no JSON schema (an arbitrary class, a callable) is refused when the
agent is made, with a :class:`~loopwright.ConfigurationError`.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, get_origin

from .._errors import ConfigurationError
from ..model import ToolCall, ToolMessage
from ..tools import Tool, ToolDefinitionError, tool
from ._lifecycle import Hooks, StopRun
from ._state import AgentState

__all__ = ["DEFAULT_OUTPUT_RETRIES", "TypedOutput", "typed_output"]

DEFAULT_OUTPUT_RETRIES = 3
"""Answers that failed validation the model may correct before the run stops."""

_SUBMIT_DESCRIPTION = (
    "Submit your final answer and end the task. Call it once, when you are done; the "
    "answer must follow the schema of the answer parameter."
)


class _Attempts:
    """One run of the agent: failed answers so far, and the valid one."""

    __slots__ = ("failed", "valid", "value")

    def __init__(self) -> None:
        self.failed = 0
        self.valid = False
        self.value: Any = None


_attempts: ContextVar[_Attempts | None] = ContextVar("loopwright_typed_output", default=None)


class TypedOutput:
    """What ``react(output=...)`` builds: the typed submit tool and the hook that counts
    failed answers and sets ``state.result`` (see the module documentation)."""

    def __init__(self, type_: Any, *, max_retries: int, who: str, name: str = "submit") -> None:
        from pydantic import TypeAdapter

        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"{who}: max_output_retries must be an int >= 0")
        self.type = type_
        self.type_name = getattr(type_, "__name__", None) or repr(type_)
        try:
            if not isinstance(type_, type) and get_origin(type_) is None:
                raise TypeError(f"{type_!r} is not a type")
            self.adapter: TypeAdapter[Any] = TypeAdapter(type_)
            self.schema = self.adapter.json_schema()
            self.tool = self._make_tool(name)
        except (ToolDefinitionError, TypeError, ValueError, AttributeError, RuntimeError) as ex:
            raise ConfigurationError(
                f"{who}: output={self.type_name} cannot be a typed result: it has no JSON "
                f"schema a model could follow ({type(ex).__name__}: {_first_line(ex)}). Use a "
                "pydantic model, a dataclass, a TypedDict or a JSON type (str, int, list[...])"
            ) from ex
        self.max_retries = max_retries
        self.hooks = _TypedHooks(self)

    def _make_tool(self, name: str) -> Tool[..., Any]:
        adapter = self.adapter

        def submit(answer: Any) -> str:
            attempts = _attempts.get()
            if attempts is not None:
                attempts.value, attempts.valid = answer, True
            return adapter.dump_json(answer).decode("utf-8")

        submit.__annotations__ = {"answer": self.type, "return": str}
        made = tool(name=name, description=_SUBMIT_DESCRIPTION, terminal=True, defer=True)(submit)
        made._inline = True  # validates and returns: no worker thread
        return made


class _TypedHooks(Hooks):
    """Per run of the agent: counts answers that failed validation, stops the run past
    the bound, and puts the valid answer in ``state.result``."""

    def __init__(self, typed: TypedOutput) -> None:
        self._typed = typed

    async def on_run_start(self, state: AgentState) -> None:
        # set in the agent's own context: its tool calls (run in copies of it) see it
        _attempts.set(_Attempts())
        state.result = None

    async def after_tool(self, call: ToolCall, result: ToolMessage) -> ToolMessage | None:
        typed = self._typed
        attempts = _attempts.get()
        if attempts is None or call.function != typed.tool.name or result.error is None:
            return None
        attempts.failed += 1
        if attempts.failed > typed.max_retries:
            raise StopRun(
                f"the answer did not validate as {typed.type_name} "
                f"{attempts.failed} times; the last: {_summary(result.error.message)}"
            )
        return None

    async def on_run_end(self, state: AgentState) -> None:
        attempts = _attempts.get()
        if attempts is not None and attempts.valid and state.completed == "submit":
            state.result = attempts.value


def typed_output(output: Any, submit: object, max_retries: int, who: str) -> TypedOutput | None:
    """The typed output an agent's ``output=`` asks for (None: none)."""
    if output is None:
        return None
    if submit is not True:
        raise ConfigurationError(
            f"{who}: output= makes the submit tool itself (it takes the typed answer): "
            "leave submit=True"
        )
    return TypedOutput(output, max_retries=max_retries, who=who)


def _summary(text: str) -> str:
    """A validation error on one line: its first lines, bounded."""
    line = " ".join(part.strip() for part in text.strip().splitlines()[:4])
    return line if len(line) <= 500 else line[:500] + "..."


def _first_line(error: object) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 300 else line[:300] + "..."
