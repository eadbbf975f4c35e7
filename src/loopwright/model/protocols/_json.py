"""The ``json`` protocol: one JSON action object per turn.

The model replies with exactly one object::

    {"thought": "I need the product first.",
     "action": {"name": "multiply", "arguments": {"a": 465, "b": 321}}}

and answers with the ``finish`` action: ``{"name": "finish", "arguments": {"answer":
...}}``. Tool results come back as user turns ``{"observation": ...}`` (``{"error":
...}`` for a failed call). The request carries ``GenerateConfig.response_schema``: a
JSON schema whose ``action`` is one of the offered tools with its own arguments schema,
so backends with constrained decoding (llama.cpp grammars, JSON-schema response
formats) make even a tiny model emit a valid action naming a real tool.

Parsing policy:

- The first JSON object in the reply is used; it may sit in a ``` fence, with prose
  around it. Near-JSON (single quotes, trailing commas, Python ``True``/``None``) is
  repaired, never evaluated. Anything after the object (a second object, an invented
  observation) is dropped.
- One action per reply: if ``action`` is a list, its first entry is executed and the
  rest are dropped.
- Tolerated shapes: ``{"action": "name", "arguments": {...}}``,
  ``{"name": ..., "arguments": ...}``, arguments as a JSON string, and
  ``{"final_answer": ...}``.
- ``finish`` calls the answer tool (``submit``) with the answer; with no answer tool
  offered it becomes the assistant's plain text. Non-string answers (``0``, ``false``,
  ``[]``) are kept as their JSON text when the answer is a string.
- A reply cut off by ``max_tokens`` inside its JSON, a reply with no JSON object, an
  empty reply, or an action without a name is a format error: the message keeps the
  text, with no tool call, and its ``format_error`` says what was wrong (the agent loop
  sends it back as ``{"error": ...}``). Unusable arguments of a named action are a call
  with ``parse_error`` set. A truncated object that ended for another reason (the model
  forgot a closing brace) is repaired.
- Parsing is linear in the reply's length: arguments nested more than 100 levels deep
  are unusable (a call with ``parse_error``) and a reply deeper than that plus the 3
  levels of an action around its arguments is a format error; at most 16 ``{``
  positions are tried; near-JSON is repaired up to 32,000 characters (strict JSON: any).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

from ..._errors import ConfigurationError
from ..._nesting import MAX_NESTING, nesting_exceeds
from .._chat import AssistantMessage, ChatMessage, ToolCall, ToolInfo, ToolMessage
from .._config import GenerateConfig
from .._output import StopReason
from ._base import ProtocolRequest
from ._cache import LRU
from ._example import ActionExample
from ._grounding import (
    Grounding,
    call_key,
    conversation_values,
    embed_schema,
    ground_answer,
    ground_schema,
    plain_thought_pattern,
    worked_examples,
)
from ._parsing import TOO_DEEP, find_json, load_json, required_params, single_string_param
from ._templates import JSON_TEMPLATE
from ._text import Reply, TextProtocol, ToolSet, answer_text, arguments_hint

__all__ = ["JsonProtocol"]

_MISSING: Any = object()
_ACTION_KEYS = ("action", "name", "tool", "final_answer", "answer")
_NAME_KEYS = ("name", "tool", "function", "tool_name")
_ARG_KEYS = ("arguments", "args", "input", "parameters", "action_input")
_ENVELOPE = 3
"""The levels a reply may nest around its arguments (``{"action": [{"arguments": ...``):
the reply may nest that much deeper than arguments may."""

_FINISH_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "The final answer."}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _is_action(value: Any) -> bool:
    return isinstance(value, dict) and any(k in value for k in _ACTION_KEYS)


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return _MISSING


class JsonProtocol(TextProtocol):
    """Tools through one JSON action object per turn, grammar-constrained where possible.

    See the module documentation for the format and the parsing policy, and
    :class:`~loopwright.model.protocols.TextProtocol` for the arguments (template,
    examples, answer tool...). The template also gets ``finish`` (the answer action's
    name), ``finish_arguments`` and ``action_names``.

    Args:
        constrain: Set ``GenerateConfig.response_schema`` so backends with constrained
            decoding enforce a valid action (default True).
        max_thought: The most characters the schema allows for the thought. Bounding it
            keeps a rambling small model from running out of ``max_tokens`` before its
            action (default: no bound; some strict JSON-schema APIs reject
            ``maxLength``).
        max_string: The most characters the schema allows for each free-text string
            argument (one without its own ``maxLength``, ``enum``, ``pattern``...), so
            the whole action is bounded, not only the thought (default: no bound).
        examples: Example replies (see :class:`ActionExample`), or ``"auto"``: one
            made-up question and call per tool, the first one through to its answer.
        ground_numbers: Arguments copied from the user's turns and tool results:
            numbers from their numbers, string enums from their words, free text from
            their phrases of up to 6 words (default False: a capable model may need
            values of its own, like 1000 to convert km to m).
        ground_answer: After a tool result, the answer is a result or one of its
            numbers (default False).
        plain_thought: The thought is empty or one sentence without numbers
            (:func:`plain_thought_pattern`): no digit, so no arithmetic in it and no
            number repeated ("14320 is 14320, ...") to its bound, nor a digit of another
            script or a sign like "¼" in its place (letters beyond Latin ones are left
            out); it ends with ``.``, ``!`` or ``?`` after a word, with single spaces and
            none before a mark, so a left-out number leaves no "The answer is ." and the
            bound no cut-off word. ``max_thought`` then counts its characters besides
            spaces (default False).
        repeat_answers: A call identical to one that succeeded earlier is the final
            answer, with that result (default False; assumes repeatable tools).
        observation_hint: A line after each successful tool result (default: none).
    """

    name = "json"
    DEFAULT_TEMPLATE: ClassVar[str] = JSON_TEMPLATE

    def __init__(
        self,
        *,
        constrain: bool = True,
        max_thought: int | None = None,
        max_string: int | None = None,
        examples: Iterable[ActionExample] | Literal["auto"] = (),
        ground_numbers: bool = False,
        ground_answer: bool = False,
        plain_thought: bool = False,
        repeat_answers: bool = False,
        observation_hint: str | None = None,
        **kwargs: Any,
    ) -> None:
        auto = isinstance(examples, str)
        if auto and examples != "auto":
            raise ConfigurationError(f'examples must be ActionExamples or "auto", got {examples!r}')
        super().__init__(examples=() if isinstance(examples, str) else examples, **kwargs)
        self.auto_example = auto
        self.ground_numbers = ground_numbers
        self.ground_answer = ground_answer
        self.plain_thought = plain_thought
        self.repeat_answers = repeat_answers
        self.observation_hint = observation_hint
        self._grounded: LRU[tuple[str, str], dict[str, Any]] = LRU(64)
        self.constrain = constrain
        for what, bound in (("max_thought", max_thought), ("max_string", max_string)):
            if bound is not None and bound < 1:
                raise ConfigurationError(f"{what} must be >= 1 (or None), got {bound}")
        self.max_thought = max_thought
        self.max_string = max_string

    # --- the tool list -----------------------------------------------------------------

    def answer_replaces_tool(self, info: ToolInfo, param: str) -> bool:
        return True  # "finish" carries the answer tool's whole schema

    def prepare_toolset(self, toolset: ToolSet) -> None:
        names = {t.name for t in toolset.visible}
        if "finish" not in names:
            finish = "finish"
        elif toolset.answer is not None and toolset.answer.name not in names:
            finish = toolset.answer.name
        else:
            finish = "final_answer"
        params = toolset.answer.parameters if toolset.answer is not None else _FINISH_PARAMS
        toolset.extra["finish"] = finish
        toolset.extra["finish_arguments"] = arguments_hint(ToolInfo(name=finish, parameters=params))
        actions: list[tuple[str, dict[str, Any]]] = [
            (t.name, t.parameters) for t in toolset.visible
        ]
        if toolset.forced is None or (
            toolset.answer is not None and toolset.forced == toolset.answer.name
        ):
            actions.append((finish, params))
        toolset.extra["actions"] = actions
        toolset.extra["schema"] = self._schema(actions, finish, toolset.answer_param, None)
        toolset.extra["action_names"] = ", ".join(name for name, _ in actions)
        toolset.extra["worked_example"] = (
            worked_examples(toolset.visible, finish, toolset.answer_param)
            if self.auto_example
            else ""
        )

    def _schema(
        self,
        actions: list[tuple[str, dict[str, Any]]],
        finish: str,
        answer_param: str,
        values: Grounding | None,
    ) -> dict[str, Any]:
        defs: dict[str, Any] = {}
        choices = []
        for name, params in actions:
            if values is not None and name == finish and self.ground_answer:
                params = ground_answer(params, answer_param, values)
            elif values is not None and self.ground_numbers:
                params = ground_schema(params, values)
            choices.append(
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": name},
                        "arguments": embed_schema(params, f"{name}__", defs, self.max_string),
                    },
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                }
            )
        thought: dict[str, Any] = {"type": "string"}
        if self.plain_thought:
            thought["pattern"] = plain_thought_pattern(self.max_thought)
        elif self.max_thought is not None:
            thought["maxLength"] = self.max_thought
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "thought": thought,
                "action": choices[0] if len(choices) == 1 else {"anyOf": choices},
            },
            "required": ["thought", "action"],
            "additionalProperties": False,
        }
        if defs:
            schema["$defs"] = defs
        return schema

    def template_vars(self, toolset: ToolSet) -> dict[str, Any]:
        return {
            "finish": toolset.extra["finish"],
            "finish_arguments": toolset.extra["finish_arguments"],
            "action_names": toolset.extra["action_names"],
            "worked_example": toolset.extra["worked_example"],
        }

    def request_config(self, config: GenerateConfig, toolset: ToolSet | None) -> GenerateConfig:
        config = super().request_config(config, toolset)
        if toolset is None or not self.constrain:
            return config
        return config.model_copy(update={"response_schema": toolset.extra["schema"]})

    def render(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ProtocolRequest:
        request = super().render(messages, tools, config)
        toolset = request.state
        grounded = self.ground_numbers or self.ground_answer or self.repeat_answers
        if not grounded or not self.constrain or not isinstance(toolset, ToolSet):
            return request
        values = conversation_values(messages)
        key = (toolset.key, values.key)
        schema = self._grounded.get(key)
        if schema is None:
            extra = toolset.extra
            schema = self._schema(extra["actions"], extra["finish"], toolset.answer_param, values)
            self._grounded.put(key, schema)
        config = request.config.model_copy(update={"response_schema": schema})
        if self.repeat_answers and values.done:
            extra = {**toolset.extra, "done": values.done}
            toolset = dataclasses.replace(toolset, extra=extra, _lookup={})
        return dataclasses.replace(request, config=config, state=toolset)

    # --- rendering -------------------------------------------------------------------

    def render_assistant(self, message: AssistantMessage, toolset: ToolSet | None) -> str:
        calls = message.tool_calls
        thought = message.reasoning or (message.content if calls else "") or ""
        finish = toolset.extra["finish"] if toolset is not None else "finish"
        answer = toolset.answer.name if toolset is not None and toolset.answer else None
        actions = [
            {"name": finish if c.function == answer else c.function, "arguments": c.arguments}
            for c in calls
        ] or [{"name": finish, "arguments": {"answer": message.content}}]
        return "\n".join(
            json.dumps({"thought": thought, "action": a}, ensure_ascii=False) for a in actions
        )

    def render_observation(self, message: ToolMessage) -> str:
        text = self.observation_text(message)
        key = "error" if message.error is not None else "observation"
        shown = json.dumps({key: text}, ensure_ascii=False)
        if self.observation_hint and message.error is None:
            shown = f"{shown}\n{self.observation_hint}"
        return shown

    def render_example(self, example: ActionExample, toolset: ToolSet) -> str:
        name = example.tool
        if toolset.is_answer_alias(name) and toolset.find(name) in (None, toolset.answer):
            name = toolset.extra["finish"]
        action = {"name": name, "arguments": example.arguments}
        return json.dumps({"thought": example.thought, "action": action}, ensure_ascii=False)

    def format_reminder(self, toolset: ToolSet) -> str:
        finish = toolset.extra["finish"]
        return (
            "Reply with exactly one JSON object:\n"
            '{"thought": "<what to do next>", "action": {"name": "<one of: '
            f'{toolset.extra["action_names"]}>", "arguments": {{<the arguments>}}}}}}\n'
            f'To answer, use the action "{finish}": '
            f'{{"thought": "<why>", "action": {{"name": "{finish}", "arguments": '
            '{"answer": "<the answer>"}}}'
        )

    # --- parsing ---------------------------------------------------------------------

    def parse_reply(self, text: str, toolset: ToolSet, stop_reason: StopReason) -> Reply:
        problems: list[str] = []
        found = find_json(text, _is_action, problems, MAX_NESTING + _ENVELOPE)
        cut_off = (
            "Your reply was cut off by the output token limit before its JSON was "
            "complete. Keep the thought short."
        )
        if found is None:
            if not text.strip():
                return self.format_error("Your reply was empty.", toolset, text)
            if "{" in text and stop_reason == "max_tokens":
                return self.format_error(cut_off, toolset, text)
            if problems:
                what = f"Your reply's JSON is not usable: {problems[0]}."
                return self.format_error(what, toolset, text)
            return self.format_error("Your reply has no JSON object.", toolset, text)
        if not found.span.closed and stop_reason == "max_tokens":
            return self.format_error(cut_off, toolset, text)
        obj: dict[str, Any] = found.value
        kept = found.end_in_reply
        raw_thought = obj.get("thought")
        thought = None if raw_thought is None else answer_text(raw_thought).strip() or None

        action = obj.get("action", _MISSING)
        if isinstance(action, list):  # several actions: the first one only
            action = next((a for a in action if isinstance(a, (dict, str))), _MISSING)
        if isinstance(action, dict):
            name, args = _first(action, _NAME_KEYS), _first(action, _ARG_KEYS)
        elif isinstance(action, str):
            name, args = action, _first(obj, _ARG_KEYS)
        elif action is _MISSING and _first(obj, _NAME_KEYS) is not _MISSING:
            name, args = _first(obj, _NAME_KEYS), _first(obj, _ARG_KEYS)
        elif action is _MISSING and _first(obj, ("final_answer", "answer")) is not _MISSING:
            name, args = "finish", {"answer": _first(obj, ("final_answer", "answer"))}
        else:
            return self.format_error('Your JSON has no "action".', toolset, text[:kept])
        if not isinstance(name, str) or not name.strip():
            return self.format_error('Your action has no "name".', toolset, text[:kept])
        tool = toolset.find(name)
        is_answer = tool is not None and tool is toolset.answer
        if is_answer or (tool is None and toolset.is_answer_alias(name)):
            return self._finish(args, toolset, thought, kept, text)
        function = tool.name if tool is not None else name.strip("`'\"*[]() \t")
        arguments = self._arguments(tool, function, args)
        if not isinstance(arguments, str) and nesting_exceeds(arguments):
            arguments = f"The arguments of {function} are not usable: {TOO_DEEP}."
        if isinstance(arguments, str):
            return self.format_error(arguments, toolset, text[:kept], function)
        done = toolset.extra.get("done")
        if done and tool is not None and call_key(function, arguments) in done:
            # asked again for a result it has: that result is the answer (repeat_answers)
            return self.final_answer(done[call_key(function, arguments)], toolset, thought, kept)
        call = ToolCall(function=function, arguments=arguments)
        return Reply(thought=thought, calls=[call], kept=kept)

    def _arguments(self, tool: ToolInfo | None, function: str, args: Any) -> dict[str, Any] | str:
        if isinstance(args, str):
            stripped = args.strip()
            single = single_string_param(tool) if tool is not None else None
            if stripped.startswith("{"):
                try:
                    args = load_json(stripped)
                except ValueError:
                    args = stripped
            if isinstance(args, str):
                if single is not None:
                    return {single: args}
                if not stripped:
                    args = None
        if args is _MISSING or args is None:
            required = required_params(tool) if tool is not None else []
            if required:
                return (
                    f'The action {function} has no "arguments"; it needs '
                    f"{', '.join(repr(r) for r in required)}."
                )
            return {}
        if isinstance(args, dict):
            return args
        props = (tool.parameters.get("properties") or {}) if tool is not None else {}
        if len(props) == 1:
            return {next(iter(props)): args}
        return (
            f'The "arguments" of {function} must be a JSON object, got '
            f"{json.dumps(args, ensure_ascii=False)[:300]}"
        )

    def _finish(
        self, args: Any, toolset: ToolSet, thought: str | None, kept: int, text: str
    ) -> Reply:
        param = toolset.answer_param
        if isinstance(args, str) and args.strip().startswith("{"):
            try:
                parsed = load_json(args)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                args = parsed
        value: Any = _MISSING
        if isinstance(args, dict):
            if param not in args and len(args) == 1:
                args = {param: next(iter(args.values()))}
            if toolset.answer is not None and set(args) - {param}:
                # an answer tool with more parameters: pass them all on
                arguments = dict(args)
                if param in arguments:
                    arguments[param] = self.answer_value(arguments[param], toolset)
                call = ToolCall(function=toolset.answer.name, arguments=arguments)
                return Reply(thought=thought, calls=[call], kept=kept)
            value = args.get(param, _MISSING)
        elif args is not _MISSING:
            value = args
        if value is _MISSING or value is None:
            finish = toolset.extra["finish"]
            return self.format_error(
                f'Your "{finish}" action has no answer; give it as '
                f'{{"name": "{finish}", "arguments": {{"answer": ...}}}}.',
                toolset,
                text[:kept],
                toolset.answer.name if toolset.answer is not None else None,
            )
        return self.final_answer(value, toolset, thought, kept)
