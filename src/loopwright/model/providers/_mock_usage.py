"""Token usage for the scripted model: an estimate, about four characters a token.

Input tokens are counted incrementally: the count of a conversation is remembered up to
its last message, so the next call counts only the messages added since (the cost of a
step grows with its new work, not with the history), and the last output's count is
reused when that message comes back as input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._chat import ChatMessage
from .._output import Usage

__all__ = ["UsageEstimate"]


def _repr_size(value: Any) -> int:
    """``len(repr(value))`` for JSON-like data; counted without recursion when scripted
    arguments nest deeper than ``repr`` allows."""
    try:
        return len(repr(value))
    except RecursionError:
        return _walked_size(value)


def _walked_size(value: Any) -> int:
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


class UsageEstimate:
    """The estimated usage of one scripted model's calls (see the module docs)."""

    def __init__(self) -> None:
        # (first message id, count, id of last counted message, tokens)
        self._prefix: tuple[str, int, str, int] | None = None
        # the last output's message and its tokens: it comes back as the next input
        self._last_output: tuple[ChatMessage, int] | None = None

    def usage(self, messages: Sequence[ChatMessage], output: ChatMessage) -> Usage:
        """The usage of a call that sent ``messages`` and got ``output``."""
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
        out_tokens = _message_tokens(output)
        self._last_output = (output, out_tokens)
        return Usage(
            input_tokens=tokens, output_tokens=out_tokens, total_tokens=tokens + out_tokens
        )
