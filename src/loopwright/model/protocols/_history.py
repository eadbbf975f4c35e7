"""A text protocol's rendering of the conversation: only new messages, prefix-stable.

A text protocol shows the model its prior tool calls as its own text and tool results as
user turns (adjacent user turns joined, for chat templates that require alternating
roles). :class:`History` does that per request while rendering only messages not seen
before:

- renderings are cached by message id (and checked to come from the very same message
  object), so earlier messages render to the very same objects, byte for byte, request
  after request: a local llama.cpp provider then reuses its KV cache for the whole
  stable prefix;
- a checkpoint (:class:`~._cache.Cursor`) is kept per conversation for "all but the last
  message": a conversation that grew resumes from it, and so does one whose last
  message is replaced each request (``iterative()``'s ephemeral nudge). Finding it is a
  pointer compare per message, in C; the request that resumes from it moves it forward
  in place (its lists extended, its last joined user turn joined again), so a request
  renders, joins and stores only its new messages, and copies the finished list once
  (the request's own: later requests never change it).

What each message looks like is the protocol's: :meth:`TextProtocol.render_assistant`,
:meth:`TextProtocol.render_observation` and its system prompt.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..._prefix import starts_with
from .._chat import (
    AssistantMessage,
    ChatMessage,
    SystemMessage,
    ToolCallError,
    ToolMessage,
    UserMessage,
)
from ._cache import CURSORS_PER_START, LRU, Cursor
from ._toolset import ToolSet, is_feedback

if TYPE_CHECKING:
    from ._text import TextProtocol

__all__ = ["History"]


class History:
    """The rendered conversations of one protocol instance (see the module docs).

    Args:
        protocol: The protocol whose format messages are rendered in.
        cache_size: How many rendered messages are kept, and how many messages the
            conversations' checkpoints may hold in all (a conversation whose checkpoint
            was dropped is rendered from its start again).
    """

    def __init__(self, protocol: TextProtocol, cache_size: int) -> None:
        self._protocol = protocol
        self._messages: LRU[str, tuple[ChatMessage, ChatMessage]] = LRU(cache_size)
        self._merged: LRU[tuple[str, ...], UserMessage] = LRU(1024)
        # call id -> parse_error of the format errors the protocol produced: their
        # results are shown to the model with the protocol's own wording of what was wrong
        self._format_errors: LRU[str, str] = LRU(1024)
        # first message id -> where that conversation's last request stood
        # (bounded by the messages the checkpoints hold, not only by conversations: each
        # holds its conversation's message lists, which would otherwise be garbage)
        self._cursors: LRU[str, list[Cursor]] = LRU(
            1024, weigh=lambda cursors: sum(c.n for c in cursors), max_weight=cache_size
        )
        # a checkpoint is extended in place: one request at a time (threads may share
        # a model)
        self._lock = threading.Lock()

    def remember(self, message: AssistantMessage, shown: AssistantMessage) -> None:
        """Show the parsed ``message`` as ``shown`` (the reply's text as the model wrote
        it) when it comes back in the history; its calls' parse errors are shown in the
        protocol's words."""
        for call in message.tool_calls:
            if call.parse_error is not None:
                self._format_errors.put(call.id, call.parse_error)
        self._messages.put(message.id, (message, shown))

    def render(
        self, messages: Sequence[ChatMessage], toolset: ToolSet | None, today: str
    ) -> list[ChatMessage]:
        """``messages`` as the model reads them: with the system prompt (when tools are
        offered), in the protocol's format, user turns joined."""
        n = len(messages)
        tkey = toolset.key if toolset is not None else None
        # The checkpoint covers "all but the last message"; only what lies after it is
        # rendered, and the checkpoint resumed from is extended in place.
        stop = n - 1 if n > 1 else n
        with self._lock:
            cur = self._resume(messages, stop, tkey, today)
            if cur is None:
                cur = self._start(messages, stop, tkey, today, toolset)
            elif cur.n < stop:
                self._extend(cur, messages, stop, toolset)
            if stop == n:
                return list(cur.out)
            last = self._render_range(messages, stop, n, toolset)
            if not self._protocol.merge_user_turns:
                return cur.out + last
            merged, _ = self._merge(cur.unmerged[cur.tail :] + last)
            out = cur.out[:-1]  # the one copy of the history a request makes: its own list
            out += merged
            return out

    def _start(
        self,
        messages: Sequence[ChatMessage],
        stop: int,
        tkey: object,
        today: str,
        toolset: ToolSet | None,
    ) -> Cursor:
        """A new checkpoint of ``messages[:stop]``, rendered from the start (each message
        from the cache when seen before)."""
        unmerged: list[ChatMessage] = []
        begin = 0
        if toolset is not None:
            first = messages[0] if messages else None
            system = first if isinstance(first, SystemMessage) else None
            unmerged.append(self._protocol.system_message(system, toolset, today))
            begin = 1 if system is not None else 0
        unmerged += self._render_range(messages, begin, stop, toolset)
        cur = Cursor(list(messages[:stop]), stop, tkey, today, unmerged, [], 0)
        self._join(cur)
        if stop > 0:
            # a few conversations may share a first message (a module-level system prompt)
            key = messages[0].id
            kept = self._cursors.get(key) or []
            self._cursors.put(key, [cur, *kept][:CURSORS_PER_START])
        return cur

    def _extend(
        self, cur: Cursor, messages: Sequence[ChatMessage], stop: int, toolset: ToolSet | None
    ) -> None:
        """Move ``cur`` forward to ``messages[:stop]``: what it held stays as it is; only
        the new messages are rendered and joined."""
        cur.src += messages[cur.n : stop]
        cur.unmerged += self._render_range(messages, cur.n, stop, toolset)
        cur.n = stop
        self._join(cur)
        key = messages[0].id
        self._cursors.put(key, self._cursors.get(key) or [cur])  # its weight changed

    def _join(self, cur: Cursor) -> None:
        """Bring ``cur.out`` up to ``cur.unmerged``: the items from ``cur.tail`` on (the
        source of its last item, which may join new user turns) are joined again."""
        if not self._protocol.merge_user_turns:
            cur.out = cur.unmerged  # the same list: nothing is joined
            cur.tail = max(len(cur.unmerged) - 1, 0)
            return
        merged, last_start = self._merge(cur.unmerged, cur.tail)
        del cur.out[len(cur.out) - 1 :]
        cur.out += merged
        cur.tail += last_start

    def _resume(
        self, messages: Sequence[ChatMessage], stop: int, tkey: object, today: str
    ) -> Cursor | None:
        """The longest checkpoint of this conversation that ``messages[:stop]`` extends:
        the same message objects in the same places (a C-level pointer compare, no copy)."""
        if not messages:
            return None
        best: Cursor | None = None
        for cur in self._cursors.get(messages[0].id) or ():
            if (
                cur.toolset_key == tkey
                and cur.today == today
                and 0 < cur.n <= stop
                and (best is None or cur.n > best.n)
                and starts_with(messages, cur.src)
            ):
                best = cur
        return best

    def _render_range(
        self, messages: Sequence[ChatMessage], begin: int, end: int, toolset: ToolSet | None
    ) -> list[ChatMessage]:
        cached = self._messages.get
        out: list[ChatMessage] = []
        for i in range(begin, end):
            message = messages[i]
            role = message.role
            if role == "system" or (role == "user" and not is_feedback(messages, i)):
                out.append(message)
                continue
            hit = cached(message.id)
            if hit is not None and hit[0] is message:
                out.append(hit[1])
            else:
                out.append(self._render_new(message, toolset))
        return out

    def _render_new(self, message: ChatMessage, toolset: ToolSet | None) -> ChatMessage:
        protocol = self._protocol
        rendered: ChatMessage
        if isinstance(message, AssistantMessage):
            rendered = AssistantMessage(
                content=protocol.assistant_text(message, toolset), model=message.model
            )
        elif isinstance(message, ToolMessage):
            result = message
            explained = self._format_errors.get(message.tool_call_id)
            if explained is not None and message.error is not None:
                error = message.error.model_copy(update={"message": explained})
                result = message.model_copy(update={"content": explained, "error": error})
            rendered = UserMessage(content=protocol.render_observation(result))
        elif isinstance(message, UserMessage):  # what was wrong with the reply before it
            error = ToolCallError(type="parsing", message=message.content)
            result = ToolMessage(content=message.content, tool_call_id="", function="", error=error)
            rendered = UserMessage(content=protocol.render_observation(result))
        else:
            return message
        self._messages.put(message.id, (message, rendered))
        return rendered

    def _merge(self, messages: list[ChatMessage], begin: int = 0) -> tuple[list[ChatMessage], int]:
        """Join adjacent user turns of ``messages[begin:]`` (tool results become user
        turns). Returns the joined list and the offset (from ``begin``) where the source
        of its last item starts: a later request re-merges from there."""
        out: list[ChatMessage] = []
        i, n = begin, len(messages)
        last_start = 0
        while i < n:
            j = i + 1
            if isinstance(messages[i], UserMessage):
                while j < n and isinstance(messages[j], UserMessage):
                    j += 1
            last_start = i - begin
            if j - i == 1:
                out.append(messages[i])
            else:
                run = messages[i:j]
                key = tuple(m.id for m in run)
                merged = self._merged.get(key)
                if merged is None:
                    merged = UserMessage(content="\n\n".join(m.content for m in run))
                    self._merged.put(key, merged)
                out.append(merged)
            i = j
        return out, last_start
