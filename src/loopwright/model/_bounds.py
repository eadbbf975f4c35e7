"""Bounds on what a model returns: its size, its tool calls, the nesting of arguments.

Model output is untrusted. ``Model.generate`` passes every output (every protocol,
native included; each provider's output checked first to be a model output of the right
types, ``_output.checked_output``) through :func:`bound_text` before a text protocol parses it, and
through :func:`bound_calls` after, before it is stored or acted on:

- text beyond ``GenerateConfig.max_output_chars`` (default :data:`DEFAULT_MAX_OUTPUT_CHARS`)
  is cut, with a visible marker, before a text protocol parses it; the output's
  ``stop_reason`` becomes ``max_tokens`` (it was cut for length), so a half-written action
  is a format error for the model rather than a call with truncated arguments;
- tool calls beyond ``GenerateConfig.max_tool_calls`` (default
  :data:`DEFAULT_MAX_TOOL_CALLS`) are dropped, and a note in the message's text tells the
  model how many were dropped and why;
- a call whose arguments nest deeper than ``MAX_NESTING`` (100) levels gets
  ``parse_error`` set (it is not run; the model is told), since deeper values fail to
  serialise or to load back from the run store (see :mod:`loopwright._nesting`);
- the arguments of a reply's calls share one budget of ``max_output_chars`` characters
  (their strings, keys and scalars, about their JSON size): a call past it is not run
  either (empty arguments and ``parse_error``), so a native reply is bounded like text;
- a call whose id is empty, or the same as an earlier call's of the reply, or not plain
  (over 128 characters, or anything but visible ASCII: a line break, a lookalike letter,
  an invisible character), gets a fresh unique id (ids come from the model: a server may
  repeat one), since the results, approvals and recorded answers of a step's calls are
  kept by call id, and a person approving a deferred call reads its id and types it back.

Each bound costs time linear in the output.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .._ids import new_id
from .._nesting import MAX_NESTING, nesting_exceeds
from ._chat import ToolCall
from ._config import GenerateConfig
from ._output import ModelOutput

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_MAX_TOOL_CALLS",
    "argument_chars",
    "bound_calls",
    "bound_text",
    "cut_text",
    "flat_call",
    "output_char_limit",
]

DEFAULT_MAX_OUTPUT_CHARS = 1_000_000
"""Model output text longer than this many characters is cut (about 1 MB)."""
DEFAULT_MAX_TOOL_CALLS = 64
"""At most this many tool calls of one reply are run; the rest are dropped."""


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters plus a marker saying so (unchanged if shorter)."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n[... output cut here: it had {len(text):,} characters, more than "
        f"the limit of {limit:,} (GenerateConfig.max_output_chars)]"
    )


def output_char_limit(config: GenerateConfig) -> int:
    """The characters of a reply kept: ``max_output_chars``, else the default. A
    streaming provider stops reading a reply once a part of it (text, reasoning, tool
    calls' arguments) is longer: the rest would be cut anyway."""
    chars = config.max_output_chars
    return chars if chars is not None else DEFAULT_MAX_OUTPUT_CHARS


def _limits(config: GenerateConfig) -> tuple[int, int]:
    chars = config.max_output_chars
    calls = config.max_tool_calls
    return (
        chars if chars is not None else DEFAULT_MAX_OUTPUT_CHARS,
        calls if calls is not None else DEFAULT_MAX_TOOL_CALLS,
    )


def bound_text(output: ModelOutput, config: GenerateConfig) -> ModelOutput:
    """``output`` with its text and reasoning cut to ``max_output_chars`` (before a text
    protocol parses it). A cut output's ``stop_reason`` is ``max_tokens``."""
    limit, _ = _limits(config)
    message = output.message
    content, reasoning = message.content, message.reasoning
    if len(content) <= limit and (reasoning is None or len(reasoning) <= limit):
        return output
    update: dict[str, Any] = {"content": cut_text(content, limit)}
    if reasoning is not None:
        update["reasoning"] = cut_text(reasoning, limit)
    message = message.model_copy(update=update)
    return replace(output, message=message, stop_reason="max_tokens")


def flat_call(call: ToolCall) -> ToolCall:
    """``call`` itself, or, when its arguments nest deeper than ``MAX_NESTING`` levels, a
    copy with no arguments whose ``parse_error`` says why (it is not run; the model is
    told). The run store writes the same placeholder for such a call that reached it
    some other way (made by an agent's own code), since it could not read it back."""
    if not nesting_exceeds(call.arguments):
        return call
    error = (
        f"the arguments nest lists or objects more than {MAX_NESTING} levels deep; write "
        "them flatter"
    )
    return call.model_copy(update={"arguments": {}, "parse_error": call.parse_error or error})


def argument_chars(value: Any, stop: int) -> int:
    """About the JSON size of ``value`` in characters (string lengths, keys, one per
    scalar or container), counted without recursion; the count stops past ``stop``."""
    total, stack = 0, [value]
    while stack and total <= stop:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + sum(len(str(k)) + 3 for k in item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 1
    return total


def _too_large(call: ToolCall, size: int, limit: int) -> ToolCall:
    error = (
        f"the arguments of this reply's calls are more than {limit:,} characters "
        f"(GenerateConfig.max_output_chars; this call's are {size:,}+); send less"
    )
    return call.model_copy(update={"arguments": {}, "parse_error": call.parse_error or error})


_PLAIN_ID = re.compile(r"[!-~]{1,128}")
"""A call id kept as the model gave it: visible ASCII, no space, at most 128 characters
(providers' own are 9-64)."""


def bound_calls(output: ModelOutput, config: GenerateConfig) -> ModelOutput:
    """``output`` with at most ``max_tool_calls`` tool calls (a note in its text tells the
    model how many were dropped), calls nested too deeply or past the reply's size
    budget marked unparseable, and a call id that is empty, repeated or not plain (over
    128 characters, or other than visible ASCII: what a person approving reads and types
    back, and providers echo) replaced by a fresh one."""
    limit, cap = _limits(config)
    message = output.message
    calls = message.tool_calls
    if not calls:
        return output
    kept: list[ToolCall] = []
    changed = False
    budget = limit
    ids = {c.id for c in calls[:cap]}
    seen: set[str] = set()
    for call in calls[:cap]:
        flat = flat_call(call)
        if not _PLAIN_ID.fullmatch(flat.id) or flat.id in seen:
            fresh = new_id()
            while fresh in ids:  # (a model could send an id shaped like ours)
                fresh = new_id()
            flat = flat.model_copy(update={"id": fresh})
        seen.add(flat.id)
        size = argument_chars(flat.arguments, budget)
        if size > budget:
            flat = _too_large(flat, size, limit)
        else:
            budget -= size
        changed = changed or flat is not call
        kept.append(flat)
    dropped = len(calls) - len(kept)
    if not changed and not dropped:
        return output
    content = message.content
    if dropped:
        note = (
            f"[{dropped:,} more tool calls in this reply were dropped, not run: at most "
            f"{cap} calls are run per reply (GenerateConfig.max_tool_calls)]"
        )
        content = f"{content}\n{note}" if content else note
    # (the same reply, bounded: its id is kept, as a text protocol remembers it by id)
    message = message.model_copy(update={"content": content, "tool_calls": kept, "id": message.id})
    return replace(output, message=message)
