"""The ``react`` protocol: ``Thought: / Action: / Action Input: / Observation:`` text.

The model writes::

    Thought: I need the product first.
    Action: multiply
    Action Input: {"a": 465, "b": 321}

generation stops at ``Observation:`` (a stop sequence, so the model cannot invent tool
results), the tool runs, and its result comes back as a user turn
``Observation: 149265``. When it knows the answer it writes ``Final Answer: ...``.

Parsing policy:

- Everything from the first ``Observation:`` on is dropped (a hallucinated result).
- One action per reply: the first ``Action`` (with the ``Action Input`` after it) is
  executed; any further actions are dropped, and so is the rest of the reply, since it
  was written without seeing the first result.
- An ``Action`` and a ``Final Answer`` in one reply: the action wins, the final answer is
  dropped (it was written before the observation; the model answers again after it).
- ``Final Answer: x`` calls the answer tool (``submit``) with ``x``; with no answer tool
  offered it becomes the assistant's plain text (which ends a ``submit=False`` agent).
  Falsy answers (``0``, ``""``, ``false``, ``[]``) are answers like any other.
- ``Action Input`` is a JSON object (near-JSON is repaired), or plain text for tools
  taking a single string. A missing or empty input is ``{}`` for a tool without required
  parameters and a format error otherwise. The arguments are then validated against the
  tool's schema by the tool layer, like native calls: a mismatch comes back to the model
  as an ``Observation`` saying what was wrong.
- Tool names match in any case, in brackets, quotes or backticks (``[Search]``,
  ```search```); an unknown name is passed on as is (the tool layer reports it, listing
  the valid names). ``Action: Final Answer`` is a final answer.
- A reply with neither an action nor a final answer (plain text, an empty reply) is a
  format error: the message keeps the text, with no tool call, and its
  ``format_error`` says what was wrong; the agent loop sends that back (shown to the
  model as an ``Observation: Error: ...``) and counts it. An action of a named tool
  whose input cannot be used is a call of that tool with ``parse_error`` set.
- Parsing is linear in the reply's length (hostile replies of megabytes included):
  Action Input nested more than 100 levels deep cannot be used (a call with
  ``parse_error``), and near-JSON is repaired only up to 32,000 characters (strict JSON
  of any size is read).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from dataclasses import dataclass
from typing import ClassVar

from .._chat import AssistantMessage, ToolMessage
from .._output import StopReason
from ._example import ActionExample
from ._parsing import NAME_JUNK
from ._templates import REACT_TEMPLATE
from ._text import Reply, TextProtocol, ToolSet, answer_text

__all__ = ["ReActProtocol"]

OBSERVATION = "Observation:"

# (possessive quantifiers: no backtracking over runs of blanks, so matching is linear)
_EMPH = r"(?:\*\*|__)?+"
_MARKER = re.compile(
    rf"^[ \t]*+{_EMPH}[ \t]*+(thought|action[ \t_]*+input|action|final[ \t_]*+answer)"
    rf"[ \t]*+{_EMPH}[ \t]*+:[ \t]*+(?:(?:\*\*|__)(?=[ \t]))?+[ \t]*+",
    re.I | re.M,
)
_OBSERVATION_LINE = re.compile(
    rf"^[ \t]*+{_EMPH}[ \t]*+observation[ \t]*+{_EMPH}[ \t]*+:", re.I | re.M
)


def _inline_input(name: str) -> tuple[str, str] | None:
    """``search[Paris]`` / ``search("Paris")`` split into the name and the input; by
    hand, in linear time."""
    opens = [i for i in (name.find("(", 1), name.find("[", 1)) if i > 0]
    body = name.rstrip()
    if not opens or not body or body[-1] not in ")]":
        return None
    first = min(opens)
    if first >= len(body) - 1:
        return None
    head = name[:first].rstrip()
    return (head, body[first + 1 : -1]) if head else None


@dataclass(slots=True)
class _Section:
    label: str  # thought | action | input | final
    start: int  # where the marker starts
    value_start: int
    end: int  # where the next marker starts (or the text ends)


@functools.lru_cache(maxsize=256)
def _label(raw: str) -> str:
    key = re.sub(r"[\s_]+", "", raw.lower())
    return {"actioninput": "input", "finalanswer": "final"}.get(key, key)


def _sections(text: str) -> tuple[str, list[_Section]]:
    matches = list(_MARKER.finditer(text))
    sections = [_Section(_label(m.group(1)), m.start(), m.end(), len(text)) for m in matches]
    for a, b in itertools.pairwise(sections):
        a.end = b.start
    lead = text[: matches[0].start()] if matches else text
    return lead, sections


class ReActProtocol(TextProtocol):
    """Tools through ``Thought / Action / Action Input / Observation / Final Answer`` text.

    See the module documentation for the format and the parsing policy, and
    :class:`~loopwright.model.protocols.TextProtocol` for the arguments (template,
    examples, answer tool...).
    """

    name = "react"
    DEFAULT_TEMPLATE: ClassVar[str] = REACT_TEMPLATE
    stop_seqs: ClassVar[tuple[str, ...]] = (OBSERVATION,)
    action_label: ClassVar[str] = "Action"
    input_label: ClassVar[str] = "Action Input"

    # --- rendering -------------------------------------------------------------------

    def render_assistant(self, message: AssistantMessage, toolset: ToolSet | None) -> str:
        calls = message.tool_calls
        lines: list[str] = []
        thought = message.reasoning or (message.content if calls else None)
        if thought:
            lines.append(f"Thought: {thought.strip()}")
        answer = toolset.answer if toolset is not None else None
        param = toolset.answer_param if toolset is not None else "answer"
        for call in calls:
            if (
                answer is not None
                and call.function == answer.name
                and set(call.arguments) <= {param}
            ):
                lines.append(f"Final Answer: {answer_text(call.arguments.get(param, ''))}")
            else:
                lines.append(f"Action: {call.function}")
                lines.append(f"Action Input: {json.dumps(call.arguments, ensure_ascii=False)}")
        if not calls:
            lines.append(f"Final Answer: {message.content}")
        return "\n".join(lines)

    def render_observation(self, message: ToolMessage) -> str:
        text = self.observation_text(message)
        if message.error is not None and not text.lower().startswith("error"):
            text = f"Error: {text}"
        return f"{OBSERVATION} {text if text.strip() else '(no output)'}"

    def render_example(self, example: ActionExample, toolset: ToolSet) -> str:
        lines = [f"Thought: {example.thought}"] if example.thought else []
        if toolset.is_answer_alias(example.tool) and toolset.find(example.tool) in (
            None,
            toolset.answer,
        ):
            value = example.arguments.get(toolset.answer_param, example.arguments.get("answer"))
            lines.append(f"Final Answer: {answer_text(value if value is not None else '')}")
        else:
            lines.append(f"Action: {example.tool}")
            lines.append(f"Action Input: {json.dumps(example.arguments, ensure_ascii=False)}")
        return "\n".join(lines)

    def format_reminder(self, toolset: ToolSet) -> str:
        names = ", ".join(t.name for t in toolset.visible)
        return (
            "Reply in this format:\n"
            "Thought: <what to do next>\n"
            f"Action: <one of: {names}>\n"
            'Action Input: <the arguments as a JSON object, e.g. {"name": "value"}>\n'
            f"and stop there; the {OBSERVATION} comes back to you. When you know the "
            "answer, reply:\n"
            "Thought: <why>\n"
            "Final Answer: <the answer>"
        )

    # --- parsing ---------------------------------------------------------------------

    def parse_reply(self, text: str, toolset: ToolSet, stop_reason: StopReason) -> Reply:
        cut = text.find(OBSERVATION)
        line = _OBSERVATION_LINE.search(text)
        if line is not None and (cut < 0 or line.start() < cut):
            cut = line.start()
        body = text if cut < 0 else text[:cut]
        if not body.strip():
            what = "Your reply was empty." if cut < 0 else "Your reply began with an Observation."
            return self.format_error(what, toolset, text)
        lead, sections = _sections(body)
        first_act = next((i for i, s in enumerate(sections) if s.label == "action"), None)
        stop_at = first_act
        if stop_at is None:
            stop_at = next((i for i, s in enumerate(sections) if s.label == "final"), None)
        before = sections if stop_at is None else sections[:stop_at]
        thoughts = [lead.strip()] + [
            body[s.value_start : s.end].strip() for s in before if s.label == "thought"
        ]
        thought = "\n".join(t for t in thoughts if t) or None

        if first_act is not None:
            return self._action(body, sections, first_act, thought, toolset, stop_reason)
        final = next((s for s in sections if s.label == "final"), None)
        if final is not None:
            return self.final_answer(
                body[final.value_start : final.end].strip(), toolset, thought, final.end
            )
        if any(s.label == "input" for s in sections):
            what = "Your reply has an Action Input but no Action naming the tool."
        else:
            what = "Your reply has no Action and no Final Answer."
        return self.format_error(what, toolset, body)

    def _action(
        self,
        body: str,
        sections: list[_Section],
        index: int,
        thought: str | None,
        toolset: ToolSet,
        stop_reason: StopReason,
    ) -> Reply:
        act = sections[index]
        name_text = body[act.value_start : act.end].strip()
        name = next((n.strip() for n in name_text.splitlines() if n.strip(NAME_JUNK)), "")
        kept = act.end
        raw_input: str | None = None
        nxt = sections[index + 1] if index + 1 < len(sections) else None
        if nxt is not None and nxt.label == "input":
            raw_input = body[nxt.value_start : nxt.end]
            kept = nxt.end
        if not name:
            return self.format_error("Your Action names no tool.", toolset, body[:kept])
        tool = toolset.find(name)
        if raw_input is None and tool is None:
            inline = _inline_input(name)  # search[Paris], search("Paris")
            if inline is not None and toolset.find(inline[0]) is not None:
                name, raw_input = inline
        return self.action(name, raw_input, toolset, thought, body[:kept], stop_reason)
