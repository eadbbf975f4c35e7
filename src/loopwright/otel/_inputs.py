"""A model call's input, newest message first, read only as far as it is wanted.

A model event lists only the input messages not shared with an earlier call: its full
input is the first ``input_base_count`` messages of event ``input_base``'s followed by
its own ``input``. ``gen_ai.input.messages`` holds the newest messages that fit in
``max_content``, so the builder walks that chain back from the newest message and
stops when the bound is reached: a step costs what it shows, not the conversation's
length (building every call's whole input made a run with contents quadratic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..model import ChatMessage
from ..transcripts import ModelEvent
from . import _attributes as a

__all__ = ["InputIndex", "ModelInput"]

ModelInput = Callable[[ModelEvent], list[ChatMessage]]
"""A model event's whole input (``Transcript.model_input``, ``RunLog.model_input``)."""

Link = tuple[str | None, int, list[str]]  # (input_base, input_base_count, input)


class InputIndex:
    """The input links of the model events a builder has seen, by event id."""

    __slots__ = ("_links",)

    def __init__(self) -> None:
        self._links: dict[str, Link] = {}

    def add(self, ev: ModelEvent) -> None:
        self._links[ev.id] = (ev.input_base, ev.input_base_count, ev.input)

    def clear(self) -> None:
        self._links.clear()

    @staticmethod
    def size(ev: ModelEvent) -> int:
        """How many messages ``ev``'s full input holds."""
        return (ev.input_base_count if ev.input_base is not None else 0) + len(ev.input)

    def newest(
        self, ev: ModelEvent, message: Callable[[str], ChatMessage | None]
    ) -> Iterator[ChatMessage]:
        """``ev``'s input messages, newest first, lazily.

        Raises:
            LookupError: A link of the chain or a message is not known, or the chain
                loops (a damaged run store).
        """
        base, count, own = ev.input_base, ev.input_base_count, ev.input
        keep = self.size(ev)  # how many of the messages in this link's list are wanted
        seen = {ev.id}
        while True:
            start = count if base is not None else 0  # where its own messages begin
            for id in reversed(own[: max(keep - start, 0)]):
                found = message(id)
                if found is None:
                    raise LookupError(f"no message {id}")
                yield found
            keep = min(keep, start)
            if base is None or keep <= 0:
                return
            if base in seen:
                raise LookupError(f"the chain of inputs loops back to event {base}")
            seen.add(base)
            link = self._links.get(base)
            if link is None:
                raise LookupError(f"no model event {base}")
            base, count, own = link

    def shown(
        self,
        ev: ModelEvent,
        message: Callable[[str], ChatMessage | None] | None,
        full: ModelInput,
        limit: int,
        cache: dict[str, str],
    ) -> tuple[str, int]:
        """``gen_ai.input.messages`` of ``ev`` (:func:`~._attributes.input_messages`)
        and how many messages it leaves out; from its whole input (``full``) when its
        chain is not all known (a base event this builder did not see)."""
        if message is not None:
            try:
                return a.input_messages(self.newest(ev, message), self.size(ev), limit, cache)
            except LookupError:
                pass
        messages = full(ev)
        return a.input_messages(reversed(messages), len(messages), limit, cache)
