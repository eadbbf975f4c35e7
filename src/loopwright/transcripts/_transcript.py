"""``Transcript``: the append-only record of a run (the context that holds it: ``_context.py``)."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from .._prefix import starts_with
from .._waits import WaitClock
from ..model import ChatMessage
from ._current import _observers, _scope
from ._events import BaseEvent, Event, InfoEvent, ModelEvent, SubtaskEvent, ToolEvent, event_data

__all__ = ["EventSubscriber", "MessageSubscriber", "Transcript"]

_log = logging.getLogger("loopwright.transcripts")

E = TypeVar("E", bound=BaseEvent)
T = TypeVar("T")
EventSubscriber = Callable[[Event], None]
"""Called with each event when it is recorded, and again when a pending event completes
(same object, ``pending`` cleared)."""
MessageSubscriber = Callable[[ChatMessage], None]
"""Called once with each message the run's events refer to, before the first event that
refers to it."""


class _Root:
    """What a transcript shares with its subtasks' transcripts: subscribers, the messages
    already seen, the working-time clock, the input prefixes of model calls.

    Slotted, and its subscribers and close callbacks are tuples, replaced (under the lock)
    when one is added or removed: most runs have none, and a live run keeps its root
    (the empty tuple is shared; an empty list was 56 B each). Calling the subscribers
    walks the tuple as it was, so one removed meanwhile is still called this once, as
    with the copy of a list made before."""

    __slots__ = (
        "bases",
        "event_subscribers",
        "last_working",
        "lock",
        "log_level",
        "message_subscribers",
        "messages",
        "model_events",
        "on_close",
        "open_count",
        "record_calls",
        "started",
        "waits",
    )

    def __init__(self, log_level: int, record_calls: bool) -> None:
        self.record_calls = record_calls
        self.lock = threading.RLock()
        self.event_subscribers: tuple[EventSubscriber, ...] = ()
        self.message_subscribers: tuple[MessageSubscriber, ...] = ()
        self.messages: dict[str, ChatMessage] = {}
        self.model_events: dict[str, ModelEvent] = {}
        # first input message id -> (event id, its input messages): prefix candidates
        self.bases: dict[str, tuple[str, list[ChatMessage]]] = {}
        self.started = time.monotonic()
        self.waits = WaitClock()  # model calls' waits (overlapping ones once), approvals
        self.last_working = 0.0
        self.log_level = log_level
        self.open_count = 0  # transcript_context blocks entered on this root
        self.on_close: tuple[Callable[[], None], ...] = ()


def _without(items: tuple[T, ...], item: T) -> tuple[T, ...]:
    """``items`` without the first ``item`` (compared as ``list.remove`` compares)."""
    for i, x in enumerate(items):
        if x is item or x == item:
            return items[:i] + items[i + 1 :]
    return items


def _check(event: BaseEvent) -> None:
    """Refuse an event a field of which is not of its type (events are plain dataclasses,
    not validated when made): here, where user code records it, not in the run store's
    writer later."""
    try:
        event_data(event)  # type: ignore[arg-type]
    except Exception as ex:
        raise TypeError(f"{type(event).__name__} not recorded: {ex}") from ex


class Transcript:
    """The record of a run: typed events in the order they happened.

    ``events`` holds the top-level events; tool calls and subtasks hold the events that
    happened within them (``ToolEvent.events``, ``SubtaskEvent.events``), and every event
    carries the ``span_id`` of what encloses it. :meth:`walk` visits them all.

    Subscribers (the run store's writer, the console display) are called with each event
    as it is recorded, and with each message once.
    """

    def __init__(
        self,
        *,
        log_level: int = logging.INFO,
        subscribers: Sequence[EventSubscriber] = (),
        record_calls: bool = True,
        _parent: Transcript | None = None,
        _container: SubtaskEvent | None = None,
    ) -> None:
        """
        Args:
            log_level: Python log records at or above this level are recorded as
                ``LoggerEvent``\\ s (the loggers' own levels apply first).
            subscribers: Called with every event (see :meth:`subscribe`); the
                subscribers of :func:`observe_transcripts` are added too.
            record_calls: Record model calls, tool calls and the store's changes (the
                usual). ``False`` records only what code records itself (``info``,
                spans, log records, subtasks): for bulk runs that keep only their final
                state, where recording every call would be much of the loop's cost.
        """
        if _parent is not None and _container is not None:
            self._root: _Root = _parent._root
            self.events: list[Event] = _container.events
            self.span_id: str | None = _container.id
        else:
            self._root = _Root(log_level, record_calls)
            self.events = []
            self.span_id = None
            for sub in (*_observers.get(), *subscribers):
                self.subscribe(sub)
        self.parent = _parent

    def __repr__(self) -> str:
        return f"Transcript({len(self.events)} events)"

    @property
    def log_level(self) -> int:
        """Log records at or above this level are captured."""
        return self._root.log_level

    @log_level.setter
    def log_level(self, level: int) -> None:
        self._root.log_level = level

    # --- recording ------------------------------------------------------------------
    def record(self, event: E) -> E:
        """Append ``event`` where this context is (the current span, tool call or
        subtask), tell the subscribers, and return it.

        This is how your code (or any part of loopwright) adds an event, e.g.
        ``transcript().record(InfoEvent(...))``.

        Raises:
            TypeError: A field of ``event`` holds a value that is not of its type (an
                event, a plain dataclass, is not validated when it is made): refused
                here, where it is recorded, not later by the run store's writer.
        """
        _check(event)
        return self._record(event)

    def _record(self, event: E) -> E:
        """:meth:`record` for events loopwright makes of values it checked."""
        scope = _scope.get()
        if scope is not None and scope.transcript is self:
            target, span = scope.target(), scope.span_id
        else:
            target, span = self.events, self.span_id
        if event.span_id is None and span is not None:
            event.span_id = span
        if not event.working_start:
            event.working_start = self.working_time()
        self._append(event, target)
        return event

    def _append(self, event: BaseEvent, target: list[Event]) -> None:
        """Append an event whose ``span_id`` and ``working_start`` are set already."""
        root = self._root
        with root.lock:
            target.append(event)  # type: ignore[arg-type]
            if isinstance(event, ModelEvent):
                root.model_events[event.id] = event
            if root.event_subscribers:
                self._notify(event)

    def update(self, event: BaseEvent) -> None:
        """Tell the subscribers that ``event`` changed (a pending event completed).

        Raises:
            TypeError: A field of ``event`` now holds a value that is not of its type
                (checked as :meth:`record` checks it).
        """
        _check(event)
        self._update(event)

    def _update(self, event: BaseEvent) -> None:
        """:meth:`update` for events loopwright completed with values it checked."""
        root = self._root
        if root.event_subscribers:
            with root.lock:
                self._notify(event)

    def info(self, data: Any, *, source: str | None = None) -> InfoEvent:
        """Record an :class:`InfoEvent`: a (markdown) string or any JSON-serialisable data.

        Raises:
            TypeError: ``data`` is not JSON-serialisable.
        """
        from pydantic_core import to_jsonable_python

        try:
            value = to_jsonable_python(data)
        except Exception as ex:
            raise TypeError(
                f"transcript info must be a string or JSON-serialisable data, got "
                f"{type(data).__name__}: {ex}"
            ) from ex
        return self._record(InfoEvent(data=value, source=source))

    def add_messages(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Send the messages not seen before to the message subscribers; return those.

        Events refer to messages by id; recording a message here makes it readable from
        the run store. Model and tool events do it for their messages on their own.
        """
        root = self._root
        new: list[ChatMessage] = []
        with root.lock:
            for m in messages:
                if m.id not in root.messages:
                    root.messages[m.id] = m
                    new.append(m)
                    for sub in root.message_subscribers:
                        self._call(sub, m, message=True)
        return new

    def message(self, id: str) -> ChatMessage | None:
        """The message with this id, if an event of this run referred to it."""
        return self._root.messages.get(id)

    # --- subscribers ----------------------------------------------------------------
    def subscribe(
        self, on_event: EventSubscriber, *, on_message: MessageSubscriber | None = None
    ) -> Callable[[], None]:
        """Call ``on_event(event)`` for each event recorded or completed from now on, and
        ``on_message(message)`` once for each message the events refer to (before the
        first such event). Returns a function that unsubscribes.

        Subscribers run on the thread that records (usually the event loop's): they must
        be quick and must not block. A subscriber that raises is logged and removed.
        """
        root = self._root
        with root.lock:
            root.event_subscribers += (on_event,)
            if on_message is not None:
                root.message_subscribers += (on_message,)

        def unsubscribe() -> None:
            with root.lock:
                root.event_subscribers = _without(root.event_subscribers, on_event)
                if on_message is not None:
                    root.message_subscribers = _without(root.message_subscribers, on_message)

        return unsubscribe

    def _notify(self, event: BaseEvent) -> None:
        for sub in self._root.event_subscribers:
            self._call(sub, event, message=False)

    def _call(self, sub: Callable[[Any], None], arg: Any, *, message: bool) -> None:
        try:
            sub(arg)
        except Exception as ex:
            # a log record inside a run goes into the transcript only: warn as well, so
            # that a display or writer that stops is seen
            _log.exception("transcript subscriber %r failed; it was removed", sub)
            warnings.warn(
                f"transcript subscriber {sub!r} failed and was removed: {ex!r}",
                RuntimeWarning,
                stacklevel=2,
            )
            root = self._root
            with root.lock:
                if message:
                    root.message_subscribers = _without(root.message_subscribers, sub)
                else:
                    root.event_subscribers = _without(root.event_subscribers, sub)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once, when the outermost :func:`transcript_context` of
        this transcript (a run's, a sample's) is left: the run has ended, and its last
        events (how it ended) were recorded before. See :func:`on_transcript_open`."""
        root = self._root
        with root.lock:
            root.on_close += (callback,)

    # --- reading --------------------------------------------------------------------
    def walk(self) -> Iterator[Event]:
        """Every event, depth first: each tool call and subtask before its events."""
        return _walk(self.events)

    def model_input(self, event: ModelEvent) -> list[ChatMessage]:
        """The full list of messages a :class:`ModelEvent` of this run was given."""
        root = self._root
        ids = _resolve_input(event, root.model_events.get)
        return [root.messages[i] for i in ids]

    # --- working time ---------------------------------------------------------------
    def working_time(self) -> float:
        """Seconds since the run began minus time spent waiting (retry backoff,
        connection slots). Never decreases."""
        root = self._root
        now = time.monotonic()
        value = now - root.started - root.waits.total(now)
        if value > root.last_working:
            root.last_working = value
        return root.last_working

    def add_wait(self, seconds: float) -> None:
        """Count ``seconds`` (a wait that already ended) as waiting, not working."""
        self._root.waits.add(seconds)

    # --- model inputs ---------------------------------------------------------------
    def _model_input_refs(
        self, event_id: str, messages: Sequence[ChatMessage]
    ) -> tuple[str | None, int, list[str]]:
        """The input fields of a new model event: a reference to the longest shared
        prefix of an earlier call's input (``input_base``, ``input_base_count``) and the
        ids of the rest (``input``); the new messages are recorded.

        The prefix is found by comparing message objects (identity first, at C speed),
        so the cost per call is a pointer comparison per message plus the new messages;
        the list kept for the next call is the last one's, extended in place.
        """
        root = self._root
        if not messages:
            return None, 0, []
        with root.lock:  # (the kept list is extended for the comparison)
            first = messages[0].id
            base = root.bases.get(first)
            k, base_id, extends = 0, None, False
            if base is not None:
                base_id, base_msgs = base
                n = len(base_msgs)
                # the usual call extends the last one: compared at C speed, without a copy
                extends = starts_with(messages, base_msgs)
                if extends:
                    k = n
                else:
                    while k < min(n, len(messages)) and messages[k].id == base_msgs[k].id:
                        k += 1
            rest = list(messages[k:])
            self.add_messages(rest)
            if extends:
                base_msgs += rest  # the kept list moves forward with the conversation
            else:
                base_msgs = list(messages)
            root.bases[first] = (event_id, base_msgs)
            # the event keeps its ids for the whole run: a copy is a list at its exact
            # size (72 B for the usual two new messages, where a comprehension's is 88)
            ids = [m.id for m in rest]
            return (base_id if k else None), k, ids.copy()


def _walk(events: Sequence[Event]) -> Iterator[Event]:
    for ev in events:
        yield ev
        if isinstance(ev, (ToolEvent, SubtaskEvent)):
            yield from _walk(ev.events)


def _resolve_input(
    event: ModelEvent,
    lookup: Callable[[str], ModelEvent | None],
    known: Callable[[str], list[str] | None] = lambda id: None,
) -> list[str]:
    """The full input ids of ``event``, following its chain of bases back to one whose
    input ``known(id)`` already has (a reader's cache), or to the first call.

    Raises:
        LookupError: A link of the chain is missing, or the chain loops (a damaged or
            crafted run store).
    """
    chain, seen = [event], {event.id}
    ids: list[str] | None = None
    while chain[-1].input_base is not None:
        base_id = chain[-1].input_base
        if base_id in seen:
            raise LookupError(
                f"model event {event.id}: the chain of inputs it extends loops back to "
                f"event {base_id}"
            )
        seen.add(base_id)
        cached = known(base_id)
        if cached is not None:
            ids = list(cached)
            break
        base = lookup(base_id)
        if base is None:
            raise LookupError(f"model event {chain[-1].id} refers to unknown event {base_id}")
        chain.append(base)
    if ids is None:
        ids = list(chain.pop().input)
    for ev in reversed(chain):
        del ids[ev.input_base_count :]
        ids.extend(ev.input)
    return ids
