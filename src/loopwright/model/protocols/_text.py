"""What the text protocols (``react``, ``json``) share: :class:`TextProtocol`.

A text protocol sends no native tools. It renders the tool descriptions and its format
instructions into the system prompt (from a replaceable Jinja2 template), prior tool
calls as its own text, and tool results as user turns; then it parses the reply text
back into tool calls.

Two separate pieces: the format contract (how one turn is written and one reply is
read, see :class:`TextProtocol`), which each protocol implements, and the rendering of
the history, :class:`~._history.History`, which only the base class uses: per call only
messages not seen before, to the very same objects as before, so a local llama.cpp
provider reuses its KV cache for the whole stable prefix. A protocol never sees the
cache. This module holds the rest they share: the system prompt, the tool list as the
protocol shows it (:class:`ToolSet`, with the answer tool found), the request's
settings and the steps of parsing every protocol shares (reading an action's input:
:meth:`TextProtocol.action`, in :mod:`._actions`).
"""

from __future__ import annotations

import abc
import datetime
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from ..._errors import ConfigurationError
from ..._ids import new_id
from .._chat import AssistantMessage, ChatMessage, SystemMessage, ToolCall, ToolInfo, ToolMessage
from .._config import GenerateConfig, ToolFunction
from .._output import ModelOutput, StopReason
from ._actions import MAX_NAME, SHOW, action_arguments, answer_input, shown
from ._base import FORMAT_ERROR_FUNCTION, ProtocolRequest, ToolProtocol
from ._cache import LRU
from ._describe import arguments_hint
from ._example import ActionExample
from ._history import History
from ._parsing import answer_param, is_string_schema, single_string_param, strip_think
from ._templates import TEXT_TEMPLATE, compile_template
from ._toolset import ANSWER_TOOL_NAMES, Reply, ToolSet, answer_text, unparsed_reply

__all__ = [
    "ANSWER_TOOL_NAMES",
    "Reply",
    "TextProtocol",
    "ToolSet",
    "answer_text",
    "arguments_hint",
    "unparsed_reply",
]

_CUT_OFF = "Your reply was cut off by the output token limit; keep your thoughts shorter."


class TextProtocol(ToolProtocol):
    """Base of the text protocols; see the module documentation.

    A new protocol is one small subclass (register it with
    :func:`~loopwright.register_protocol`). It must implement the format contract:

    - :meth:`render_assistant`: an assistant turn of the history (its calls, its
      thought) as the model would have written it;
    - :meth:`render_observation`: a tool result as the text of a user turn
      (:meth:`observation_text` gives the result or its error);
    - :meth:`parse_reply`: reply text to a :class:`Reply`, never raising; use
      :meth:`action` for "this tool, with this input text" (JSON, near-JSON or plain
      text; answer aliases; bad input reported to the model), :meth:`final_answer` and
      :meth:`format_error`;
    - :meth:`format_reminder`: a short statement of the expected format, sent with
      every format error and shown in the default system prompt.

    It may set ``name``, ``stop_seqs`` (e.g. where an invented tool result would
    start), ``DEFAULT_TEMPLATE`` (default: the tools, then the format reminder),
    ``action_label`` / ``input_label`` (its words in error messages), and override
    :meth:`render_example` (default: the example through :meth:`render_assistant`),
    :meth:`template_vars`, :meth:`prepare_toolset`, :meth:`request_config` and
    :meth:`answer_replaces_tool`. Unparsed replies are shown again as written, before
    :meth:`render_assistant` is asked; the history's caching and incremental
    rendering are the base class's and need nothing from the protocol.

    Args:
        template: A Jinja2 template for the system prompt, replacing the default. It
            gets ``system`` (the agent's own system prompt, may be empty), ``tools``
            (dicts with ``name``, ``description``, ``parameters``, ``arguments``: a
            one-line sketch of the JSON arguments, ``text_input``: true when plain text
            works), ``tool_names``, ``today`` (ISO date), ``answer`` (the answer tool's
            name, or none), ``forced`` (a tool that must be called, or none) and
            ``examples`` (rendered example replies), plus the protocol's own variables.
        examples: Example replies to show (see :class:`ActionExample`).
        answer_tool: The name of the tool a final answer calls. Default: ``submit``,
            else ``finish``, when one of them is offered. When none is offered, a final
            answer becomes the assistant's plain text (no tool call).
        merge_user_turns: Join consecutive user turns (tool results, nudges) into one,
            for chat templates that require alternating roles.
        today: Returns today's date for the prompt (default: the local date).
        cache_size: How many rendered messages are kept per protocol instance, and how
            many messages its conversations' checkpoints may hold in all (a conversation
            whose checkpoint was dropped is rendered from its start again).
    """

    DEFAULT_TEMPLATE: ClassVar[str] = TEXT_TEMPLATE
    stop_seqs: ClassVar[tuple[str, ...]] = ()
    action_label: ClassVar[str] = "action"
    """What a reply's naming of a tool is called in error messages."""
    input_label: ClassVar[str] = "input"
    """What an action's input is called in error messages (``Your input for add...``)."""

    def __init__(
        self,
        *,
        template: str | None = None,
        examples: Iterable[ActionExample] = (),
        answer_tool: str | None = None,
        merge_user_turns: bool = True,
        today: Callable[[], datetime.date] | None = None,
        cache_size: int = 16384,
    ) -> None:
        self.template = template if template is not None else self.DEFAULT_TEMPLATE
        self.examples = list(examples)
        self.answer_tool = answer_tool
        self.merge_user_turns = merge_user_turns
        self._today = today or datetime.date.today
        self._compiled: Any = None
        if template is not None:  # a user's template: its mistakes show now, not at a call
            import jinja2

            try:
                self._compiled = compile_template(template)
            except jinja2.TemplateSyntaxError as ex:
                raise ConfigurationError(
                    f"{type(self).__name__}: the template does not parse (line {ex.lineno}: "
                    f"{ex.message})"
                ) from None
        if cache_size < 1:
            raise ConfigurationError(f"cache_size must be >= 1, got {cache_size}")
        self._history = History(self, cache_size)
        self._systems: LRU[tuple[str, str, str], tuple[SystemMessage | None, SystemMessage]]
        self._systems = LRU(64)
        self._toolsets: LRU[str, ToolSet] = LRU(64)
        self._last_tools: tuple[tuple[ToolInfo, ...], str, ToolSet] | None = None
        # (config, toolset, request config) of the last request: the same agent asks with
        # the same config and tools call after call
        self._last_config: tuple[GenerateConfig, ToolSet | None, GenerateConfig] | None = None

    # --- what each protocol defines ----------------------------------------------------

    @abc.abstractmethod
    def render_assistant(self, message: AssistantMessage, toolset: ToolSet | None) -> str:
        """An assistant message of the history in this protocol's format."""

    @abc.abstractmethod
    def render_observation(self, message: ToolMessage) -> str:
        """A tool result as the text of a user turn."""

    @abc.abstractmethod
    def parse_reply(self, text: str, toolset: ToolSet, stop_reason: StopReason) -> Reply:
        """Parse reply text; never raises for bad text (it becomes a format error)."""

    @abc.abstractmethod
    def format_reminder(self, toolset: ToolSet) -> str:
        """A short statement of the expected format, appended to format errors."""

    # --- what a protocol may override -----------------------------------------------

    def render_example(self, example: ActionExample, toolset: ToolSet) -> str:
        """An example reply in this protocol's format (default: the example as an
        assistant turn, through :meth:`render_assistant`)."""
        thought = example.thought or None
        tool = toolset.find(example.tool)
        if toolset.is_answer_alias(example.tool) and tool in (None, toolset.answer):
            args = example.arguments
            value = args.get(toolset.answer_param, args.get("answer", ""))
            if toolset.answer is None:
                message = AssistantMessage(content=answer_text(value), reasoning=thought)
                return self.render_assistant(message, toolset)
            call = ToolCall(function=toolset.answer.name, arguments={toolset.answer_param: value})
        else:
            call = ToolCall(function=example.tool, arguments=example.arguments)
        message = AssistantMessage(reasoning=thought, tool_calls=[call])
        return self.render_assistant(message, toolset)

    def template_vars(self, toolset: ToolSet) -> dict[str, Any]:
        """Extra variables for this protocol's template."""
        return {}

    def prepare_toolset(self, toolset: ToolSet) -> None:
        """Compute protocol data for a new tool list (stored in ``toolset.extra``)."""

    def request_config(self, config: GenerateConfig, toolset: ToolSet | None) -> GenerateConfig:
        """The request's settings: native tool settings removed, stop sequences added."""
        update: dict[str, Any] = {}
        if config.tool_choice is not None:
            update["tool_choice"] = None
        if config.parallel_tool_calls is not None:
            update["parallel_tool_calls"] = None
        if toolset is not None and self.stop_seqs:
            stops = list(config.stop_seqs or [])
            stops += [s for s in self.stop_seqs if s not in stops]
            update["stop_seqs"] = stops
        return config.model_copy(update=update) if update else config

    # --- rendering -----------------------------------------------------------------

    def assistant_text(self, message: AssistantMessage, toolset: ToolSet | None) -> str:
        """An assistant message of the history as the model wrote it: a reply that could
        not be parsed as it was, any other through :meth:`render_assistant` (without
        the never-executed ``format_error`` calls of runs recorded by older versions)."""
        unparsed = unparsed_reply(message)
        if unparsed is not None:
            return unparsed
        calls = message.tool_calls
        if any(c.function == FORMAT_ERROR_FUNCTION for c in calls):
            kept = [c for c in calls if c.function != FORMAT_ERROR_FUNCTION]
            message = message.model_copy(update={"tool_calls": kept})
        return self.render_assistant(message, toolset)

    @staticmethod
    def observation_text(message: ToolMessage) -> str:
        """A tool result's text: its content, else its error's message."""
        return message.content or (message.error.message if message.error else "")

    def render(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ProtocolRequest:
        toolset = self._toolset(tools, config.tool_choice)
        out = self._history.render(messages, toolset, self._today().isoformat())
        last = self._last_config
        if last is not None and last[0] is config and last[1] is toolset:
            request_config = last[2]
        else:
            request_config = self.request_config(config, toolset)
            self._last_config = (config, toolset, request_config)
        return ProtocolRequest(out, [], request_config, toolset)

    def system_message(
        self, first: SystemMessage | None, toolset: ToolSet, today: str
    ) -> SystemMessage:
        """The system prompt for ``toolset``, the agent's own (``first``) included: the
        very same message object while they and the date stay the same."""
        key = (first.id if first is not None else "", toolset.key, today)
        hit = self._systems.get(key)
        if hit is not None and hit[0] is first:
            return hit[1]
        content = self.render_prompt(first.content if first is not None else "", toolset, today)
        message = SystemMessage(content=content)
        self._systems.put(key, (first, message))
        return message

    def render_prompt(self, system: str, toolset: ToolSet, today: str) -> str:
        """The system prompt: the template rendered for ``toolset``."""
        if self._compiled is None:
            self._compiled = compile_template(self.template)
        tools = [
            {
                "name": t.name,
                "description": " ".join(t.description.split()),
                "parameters": t.parameters,
                "arguments": arguments_hint(t),
                "text_input": self._single_string(t),
            }
            for t in toolset.visible
        ]
        variables: dict[str, Any] = {
            "system": system.strip(),
            "tools": tools,
            "tool_names": ", ".join(t.name for t in toolset.visible),
            "today": today,
            "answer": toolset.answer.name if toolset.answer is not None else None,
            "forced": toolset.forced,
            "examples": [self.render_example(e, toolset) for e in self.examples],
            "format": self.format_reminder(toolset),
        }
        variables.update(self.template_vars(toolset))
        text: str = self._compiled.render(**variables)
        return text.strip() + "\n"

    @staticmethod
    def _single_string(info: ToolInfo) -> bool:
        return single_string_param(info) is not None

    # --- the tool list -----------------------------------------------------------------

    def _toolset(self, tools: Sequence[ToolInfo], choice: Any) -> ToolSet | None:
        if choice == "none" or not tools:
            return None
        forced = choice.name if isinstance(choice, ToolFunction) else None
        infos = tuple(tools)
        marker = forced or ""
        last = self._last_tools
        if (
            last is not None
            and last[1] == marker
            and len(last[0]) == len(infos)
            and all(a is b for a, b in zip(last[0], infos, strict=True))
        ):
            return last[2]
        key = json.dumps(
            [marker, self.answer_tool, [[t.name, t.description, t.parameters] for t in infos]],
            sort_keys=True,
            default=str,
        )
        toolset = self._toolsets.get(key)
        if toolset is None:
            toolset = self._new_toolset(key, list(infos), forced)
            self._toolsets.put(key, toolset)
        self._last_tools = (infos, marker, toolset)
        return toolset

    def _new_toolset(self, key: str, tools: list[ToolInfo], forced: str | None) -> ToolSet:
        by_name = {t.name: t for t in tools}
        if forced is not None and forced in by_name:
            tools = [by_name[forced]]
            by_name = {forced: tools[0]}
        names = (self.answer_tool,) if self.answer_tool else ANSWER_TOOL_NAMES
        answer = next((by_name[n] for n in names if n in by_name), None)
        param = answer_param(answer) if answer is not None else "answer"
        visible = [t for t in tools if t is not answer or not self.answer_replaces_tool(t, param)]
        toolset = ToolSet(key, tools, visible, answer, param, forced)
        self.prepare_toolset(toolset)
        return toolset

    def answer_replaces_tool(self, info: ToolInfo, param: str) -> bool:
        """Whether a final answer stands in for the answer tool, which is then not listed
        as an action (default: when it requires nothing but the answer)."""
        required = info.parameters.get("required") or []
        return all(r == param for r in required)

    # --- parsing -------------------------------------------------------------------

    def parse(self, output: ModelOutput, request: ProtocolRequest) -> ModelOutput:
        toolset = request.state
        message = output.message
        if not isinstance(toolset, ToolSet) or message.tool_calls:
            return output
        raw = message.content
        text, think = strip_think(raw)
        offset = len(raw) - len(text)
        stop = output.stop_reason
        reply = self.parse_reply(text, toolset, stop)
        failed = reply.error is not None or (
            reply.calls and all(c.parse_error is not None for c in reply.calls)
        )
        if failed:
            if stop in ("model_length", "content_filter"):
                return output  # nothing usable: the loop recovers (prunes, rephrases)
            if stop == "max_tokens":
                if reply.error is not None and "output token limit" not in reply.error:
                    reply.error = f"{_CUT_OFF} {reply.error}"
                for call in reply.calls:
                    if "output token limit" not in (call.parse_error or ""):
                        call.parse_error = f"{_CUT_OFF} {call.parse_error}"
        thoughts = [t for t in (message.reasoning, think, reply.thought) if t]
        parsed = AssistantMessage(
            id=message.id,
            content=reply.content,
            reasoning="\n\n".join(thoughts) if thoughts else None,
            tool_calls=reply.calls,
            model=message.model,
            format_error=reply.error,
        )
        kept = raw if reply.kept is None else raw[: offset + reply.kept]
        self._history.remember(parsed, AssistantMessage(content=kept, model=message.model))
        if reply.calls and stop in ("stop", "unknown"):
            stop = "tool_calls"
        return replace(output, message=parsed, stop_reason=stop)

    # --- helpers for the parsers ---------------------------------------------------------

    def format_error(
        self, what: str, toolset: ToolSet, text: str, function: str | None = None
    ) -> Reply:
        """A reply that could not be read: what was wrong and the expected format.

        With ``function`` (the model named a tool), one call of it carrying
        ``parse_error``; without, no call and ``Reply.error`` (the message's
        ``format_error``). ``text`` (the start of the reply that is kept in the history)
        becomes the message content, as the model wrote it."""
        error = f"{what}\n\n{self.format_reminder(toolset)}"
        if function is None:
            return Reply(content=text, kept=len(text), error=error)
        call = ToolCall(id=new_id(), function=function, parse_error=error)
        return Reply(calls=[call], content=text, kept=len(text))

    def action(
        self,
        name: str,
        raw_input: str | None,
        toolset: ToolSet,
        thought: str | None,
        text: str,
        stop_reason: StopReason,
    ) -> Reply:
        """A reply that names the tool ``name`` with the input text ``raw_input`` (a JSON
        object, near-JSON, or plain text for a tool taking one string; ``None`` when
        there is none); ``text`` is the part of the reply that was acted on.

        The answer tool's aliases (``finish``, ``Final Answer``...) give a final answer;
        an unknown name is passed on (the tool layer reports it, listing the valid
        names); an input that cannot be used is a call with ``parse_error`` saying why,
        in this protocol's words (:attr:`action_label`, :attr:`input_label`)."""
        kept = len(text)
        tool = toolset.find(name)
        if tool is None and toolset.is_answer_alias(name):
            return self.final_answer(answer_input(raw_input), toolset, thought, kept)
        function = tool.name if tool is not None else name.strip("`'\"*[]() \t")
        if len(function) > MAX_NAME:
            what = f"Your {self.action_label} is not a tool name: {shown(function[:SHOW])}"
            return self.format_error(what, toolset, text)
        args = action_arguments(tool, function, raw_input, stop_reason, self.input_label)
        if isinstance(args, str):
            return self.format_error(args, toolset, text, function)
        return Reply(
            thought=thought, calls=[ToolCall(function=function, arguments=args)], kept=kept
        )

    def final_answer(self, value: Any, toolset: ToolSet, thought: str | None, kept: int) -> Reply:
        """A final answer: a call of the answer tool, or plain text when none is offered."""
        if toolset.answer is None:
            return Reply(thought=thought, content=answer_text(value), kept=kept)
        value = self.answer_value(value, toolset)
        call = ToolCall(function=toolset.answer.name, arguments={toolset.answer_param: value})
        return Reply(thought=thought, calls=[call], kept=kept)

    @staticmethod
    def answer_value(value: Any, toolset: ToolSet) -> Any:
        """A final answer as the answer tool's parameter takes it: non-string values
        become their JSON text when the parameter is a string (``0`` -> ``"0"``)."""
        if isinstance(value, str) or toolset.answer is None:
            return value
        schema = (toolset.answer.parameters.get("properties") or {}).get(toolset.answer_param)
        return answer_text(value) if schema is None or is_string_schema(schema) else value
