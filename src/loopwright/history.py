"""History management: pruning, truncation, compaction and context-overflow recovery.

Every function here returns a new list and never mutates the messages it is given (a
changed message is a copy with a new id: the run store saves each message once, by id),
and never leaves a broken pair behind: a tool result whose call is gone is dropped, and so is
a tool call whose result is gone (providers reject both).

Policies are objects the agent loop consults each step::

    agent = lw.react(tools=[...], history=lw.prune_when(max_messages=200, keep_last=60))

A policy has ``apply(messages, usage)`` — called every step, cheap when nothing needs doing —
and ``reduce(messages)`` — called when the model's context overflowed, must make the
history smaller. Combine several with :func:`compose`.

A plain function ``messages -> messages`` (sync or async) is a policy too, wherever one
is accepted: it is applied every step, and on overflow it is applied once more, the
default overflow recovery taking over when that did not make the history smaller::

    def keep_recent(messages):
        return lw.prune(messages, keep_last=40)

    agent = lw.react(history=keep_recent)
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias

from ._errors import ConfigurationError
from ._ids import new_id
from .model import (
    AssistantMessage,
    ChatMessage,
    GenerateConfig,
    Model,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    get_model,
)
from .tools import truncate_output

__all__ = [
    "HistoryFunction",
    "HistoryPolicy",
    "as_history_policy",
    "compact",
    "compact_when",
    "compose",
    "fix_tool_pairs",
    "prune",
    "prune_when",
    "truncate_messages",
    "truncate_when",
]


def fix_tool_pairs(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Drop tool results whose call is missing and tool calls whose result is missing.

    A tool call counts as answered only by a tool result that comes after it, and a
    result only by a call before it. An assistant message that loses all its tool calls
    and has no text is dropped too.
    """
    answered_later: set[str] = set()
    keep_calls: dict[int, list[ToolCall]] = {}
    for i in range(len(messages) - 1, -1, -1):  # which calls have a result after them
        m = messages[i]
        if isinstance(m, ToolMessage):
            answered_later.add(m.tool_call_id)
        elif isinstance(m, AssistantMessage) and m.tool_calls:
            keep_calls[i] = [c for c in m.tool_calls if c.id in answered_later]
    called: set[str] = set()
    out: list[ChatMessage] = []
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage) and m.tool_calls:
            keep = keep_calls[i]
            if len(keep) != len(m.tool_calls):
                if not keep and not m.content.strip():
                    continue
                m = m.model_copy(update={"tool_calls": keep, "id": new_id()})
            called.update(c.id for c in keep)
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in called:
                continue
            called.discard(m.tool_call_id)  # one result per call
        out.append(m)
    return out


def _anchors(messages: Sequence[ChatMessage]) -> list[int]:
    """Indexes of the first system message and the first user message."""
    keep: list[int] = []
    for kind in (SystemMessage, UserMessage):
        for i, m in enumerate(messages):
            if isinstance(m, kind):
                keep.append(i)
                break
    return sorted(keep)


def prune(messages: Sequence[ChatMessage], keep_last: int) -> list[ChatMessage]:
    """Keep the first system and first user message, then the newest ``keep_last``.

    Tool results and tool calls left without their partner are dropped, so the result
    may hold fewer than ``keep_last`` recent messages.
    """
    _check_count(keep_last, "keep_last", "prune", least=0, optional=False)
    anchors = _anchors(messages)
    tail_start = max(len(messages) - keep_last, 0)
    head = [messages[i] for i in anchors if i < tail_start]
    tail = list(messages[tail_start:]) if keep_last else []
    return fix_tool_pairs(head + tail)


def truncate_messages(
    messages: Sequence[ChatMessage], max_bytes: int, *, roles: Sequence[str] = ("tool", "user")
) -> list[ChatMessage]:
    """Cut the text of any message (of the given roles) longer than ``max_bytes`` in the
    middle, keeping head and tail with a marker. Other messages are passed through."""
    out: list[ChatMessage] = []
    for m in messages:
        if m.role in roles and len(m.content) > max_bytes // 4:
            text, cut = truncate_output(m.content, max_bytes)
            if cut:
                m = m.model_copy(update={"content": text, "id": new_id()})
        out.append(m)
    return out


COMPACT_PROMPT = (
    "Summarise the conversation above for your own future reference: the task, what has "
    "been done, what was found (keep exact names, numbers, paths and results), and what "
    "remains to do. Be concise; this summary replaces the older messages."
)


async def compact(
    messages: Sequence[ChatMessage],
    *,
    keep_last: int = 10,
    model: str | Model | None = None,
    prompt: str = COMPACT_PROMPT,
    config: GenerateConfig | None = None,
) -> list[ChatMessage]:
    """Replace all but the anchors and the newest ``keep_last`` messages by a summary
    written by ``model`` (default: the current model)."""
    kept = prune(messages, keep_last)
    kept_ids = {m.id for m in kept}
    older = [m for m in messages if m.id not in kept_ids]
    older = fix_tool_pairs(older)
    if not older:
        return kept
    summariser = get_model(model)
    system = [m for m in kept if isinstance(m, SystemMessage)][:1]
    request: list[ChatMessage] = [*system, *older, UserMessage(content=prompt)]
    output = await summariser.generate(request, config=config)
    summary = UserMessage(
        content=f"[Summary of {len(older)} earlier messages]\n{output.text.strip()}"
    )
    anchor_ids = {messages[i].id for i in _anchors(messages)}
    anchors = [m for m in kept if m.id in anchor_ids]
    rest = [m for m in kept if m.id not in anchor_ids]
    return fix_tool_pairs([*anchors, summary, *rest])


class HistoryPolicy(abc.ABC):
    """How the agent loop keeps its history within bounds."""

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        """Called before every model call with the conversation and the last call's usage
        (its ``input_tokens + output_tokens`` is the conversation's size in tokens as
        the provider counted it). Return ``messages`` itself when nothing needs doing."""
        return messages

    @abc.abstractmethod
    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """Make the history smaller: the model's context overflowed."""


HistoryFunction: TypeAlias = Callable[
    [list[ChatMessage]], list[ChatMessage] | Awaitable[list[ChatMessage]]
]
"""A history policy as a plain function: ``messages -> messages``, sync or async."""


class _FunctionPolicy(HistoryPolicy):
    """A :data:`HistoryFunction` as a policy (see the module documentation)."""

    def __init__(self, function: HistoryFunction) -> None:
        self.function = function
        self.name = getattr(function, "__qualname__", None) or repr(function)

    def __repr__(self) -> str:
        return f"history policy {self.name}"

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        result = self.function(messages)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, list):  # a bug in the function: say which
            raise TypeError(
                f"history policy {self.name} returned {type(result).__name__}; it must "
                "return the list of messages to keep"
            )
        return result

    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        smaller = await self.apply(messages, None)
        if _shrank(smaller, messages):
            return smaller
        return await DEFAULT_OVERFLOW_POLICY.reduce(messages)


def as_history_policy(policy: object, who: str = "history") -> HistoryPolicy:
    """``policy`` as a :class:`HistoryPolicy`: a policy as it is, a plain function
    ``messages -> messages`` (sync or async) wrapped.

    Raises:
        ConfigurationError: ``policy`` is neither (said when it is given, not mid-run).
    """
    if isinstance(policy, HistoryPolicy):
        return policy
    if callable(policy) and not isinstance(policy, type) and _takes_one_argument(policy):
        return _FunctionPolicy(policy)
    raise ConfigurationError(
        f"{who}: expected a history policy (lw.prune_when(...), lw.truncate_when(...), "
        "lw.compact_when(...), lw.compose(...)) or a function messages -> messages, got "
        f"{policy!r}"
    )


def _takes_one_argument(function: Callable[..., object]) -> bool:
    try:
        inspect.signature(function).bind(None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (some builtins): let it be tried
        return True
    return True


def _shrank(smaller: Sequence[ChatMessage], messages: Sequence[ChatMessage]) -> bool:
    return len(smaller) < len(messages) or sum(len(m.content) for m in smaller) < sum(
        len(m.content) for m in messages
    )


def _context_tokens(usage: Usage | None) -> int:
    return 0 if usage is None else usage.input_tokens + usage.output_tokens


class _Prune(HistoryPolicy):
    def __init__(self, max_messages: int | None, max_tokens: int | None, keep_last: int):
        self.max_messages, self.max_tokens, self.keep_last = max_messages, max_tokens, keep_last

    def _over(self, messages: list[ChatMessage], usage: Usage | None) -> bool:
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        return self.max_tokens is not None and _context_tokens(usage) > self.max_tokens

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        return prune(messages, self.keep_last) if self._over(messages, usage) else messages

    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        keep = min(self.keep_last, max(len(messages) // 2, 1))
        return prune(messages, keep)


def prune_when(
    *, max_messages: int | None = None, max_tokens: int | None = None, keep_last: int = 20
) -> HistoryPolicy:
    """Prune to the newest ``keep_last`` messages (plus anchors) whenever the history has
    more than ``max_messages`` messages or the last call used more than ``max_tokens``
    tokens. On overflow, prune to half the history (at most ``keep_last``)."""
    _check_trigger("prune_when", max_messages, keep_last, max_tokens)
    return _Prune(max_messages, max_tokens, keep_last)


def _check_count(value: object, what: str, who: str, *, least: int, optional: bool) -> None:
    """Refuse what is not a whole number >= ``least`` (or None when ``optional``), when
    the policy is made, not at the step that would compare it."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        also = " or None" if optional else ""
        raise ConfigurationError(
            f"{who}: {what} must be >= {least} (a whole number{also}), got {value!r}"
        )


def _check_trigger(
    who: str, max_messages: int | None, keep_last: int, max_tokens: int | None = None
) -> None:
    _check_count(keep_last, "keep_last", who, least=0, optional=False)
    _check_count(max_messages, "max_messages", who, least=1, optional=True)
    _check_count(max_tokens, "max_tokens", who, least=1, optional=True)
    if max_messages is not None and max_messages <= keep_last:
        raise ConfigurationError(
            f"{who}: max_messages ({max_messages}) must be larger than keep_last ({keep_last}), "
            "or the policy would act at every step"
        )


class _Truncate(HistoryPolicy):
    _MAX_CHECKED = 100_000

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        # ids of messages that fit (as they are, or as cut): a history is examined back
        # to the first of them, O(new) per step. A message that was cut is not one of
        # them (another run may send it again); the set is forgotten when it grows large
        # (the histories are then examined once more).
        self._checked: set[str] = set()

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        if len(self._checked) > self._MAX_CHECKED:
            self._checked.clear()
        changed = False
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if m.id in self._checked:
                break
            if m.role in ("tool", "user") and len(m.content.encode()) > self.max_bytes:
                text, _ = truncate_output(m.content, self.max_bytes)
                if not changed:
                    messages, changed = list(messages), True
                m = messages[i] = m.model_copy(update={"content": text, "id": new_id()})
            self._checked.add(m.id)
        return messages

    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        return truncate_messages(messages, max(self.max_bytes // 2, 256))


def truncate_when(max_bytes: int) -> HistoryPolicy:
    """Cut any tool result or user message longer than ``max_bytes`` (head and tail kept).
    On overflow, cut everything to half that."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ConfigurationError(f"truncate_when: max_bytes must be > 0, got {max_bytes!r}")
    return _Truncate(max_bytes)


class _Compact(HistoryPolicy):
    def __init__(
        self,
        max_messages: int | None,
        max_tokens: int | None,
        keep_last: int,
        model: str | Model | None,
    ) -> None:
        self._trigger = _Prune(max_messages, max_tokens, keep_last)
        self.keep_last, self.model = keep_last, model

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        if not self._trigger._over(messages, usage):
            return messages
        return await compact(messages, keep_last=self.keep_last, model=self.model)

    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        keep = min(self.keep_last, max(len(messages) // 2, 1))
        return await compact(messages, keep_last=keep, model=self.model)


def compact_when(
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    keep_last: int = 10,
    model: str | Model | None = None,
) -> HistoryPolicy:
    """Summarise older turns with a model call when over ``max_messages`` messages or
    ``max_tokens`` tokens, keeping the newest ``keep_last``."""
    _check_trigger("compact_when", max_messages, keep_last, max_tokens)
    if model is not None and not isinstance(model, str | Model):
        raise ConfigurationError(
            f"compact_when: model must be a model name, a Model or None (the run's), got {model!r}"
        )
    return _Compact(max_messages, max_tokens, keep_last, model)


class _Composed(HistoryPolicy):
    def __init__(self, policies: Sequence[HistoryPolicy | HistoryFunction]) -> None:
        self.policies = [as_history_policy(p, "compose") for p in policies]

    async def apply(self, messages: list[ChatMessage], usage: Usage | None) -> list[ChatMessage]:
        for p in self.policies:
            messages = await p.apply(messages, usage)
        return messages

    async def reduce(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        for p in self.policies:
            smaller = await p.reduce(messages)
            if _shrank(smaller, messages):
                return smaller
        return messages


def compose(*policies: HistoryPolicy | HistoryFunction) -> HistoryPolicy:
    """Apply policies (or functions ``messages -> messages``) in order each step; on
    overflow, use the first that shrinks."""
    return _Composed(policies)


DEFAULT_OVERFLOW_POLICY: HistoryPolicy = compose(truncate_when(8 * 1024), prune_when(keep_last=20))
"""What the loop uses to recover from a context overflow when no policy is given."""
