"""A transcript's subscribers and close callbacks are tuples replaced when one is added or
removed (a live run keeps its root: most have none); they behave as the lists did."""

from __future__ import annotations

import warnings

import loopwright as lw


class _Seen:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.messages: list[str] = []

    def on_event(self, event: lw.Event) -> None:
        self.events.append(event.event)

    def on_message(self, message: lw.ChatMessage) -> None:
        self.messages.append(message.id)
        raise RuntimeError("message subscriber bug")


def test_a_root_without_subscribers_holds_no_list_of_its_own() -> None:
    t, u = lw.Transcript(), lw.Transcript()
    root = t._root
    assert not hasattr(root, "__dict__")
    assert root.event_subscribers == () and root.message_subscribers == () and root.on_close == ()
    assert u._root.event_subscribers is root.event_subscribers  # the one empty tuple


def test_a_failing_message_subscriber_leaves_the_event_subscriber_of_the_same_object() -> None:
    t = lw.Transcript()
    seen = _Seen()
    t.subscribe(seen.on_event, on_message=seen.on_message)
    first, second = lw.UserMessage(content="a"), lw.UserMessage(content="b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t.add_messages([first, second])
    assert seen.messages == [first.id]  # removed after its failure: not called again
    assert any("message subscriber bug" in str(w.message) for w in caught)
    t.info("still heard")
    assert seen.events == ["info"]


def test_unsubscribing_a_bound_method_by_an_equal_one_and_twice() -> None:
    t = lw.Transcript()
    seen = _Seen()
    stop = t.subscribe(seen.on_event)
    other = t.subscribe(lambda e: None)
    t.info("one")
    stop()
    stop()  # (a second time: nothing)
    t.info("two")
    assert seen.events == ["info"] and len(t._root.event_subscribers) == 1
    other()
    assert t._root.event_subscribers == ()


def test_a_subscriber_added_or_removed_while_the_others_are_called() -> None:
    """The subscribers called for an event are those subscribed when it was recorded."""
    t = lw.Transcript()
    late: list[str] = []
    stops: list[object] = []

    def adds(event: lw.Event) -> None:
        if not stops:
            stops.append(t.subscribe(lambda e: late.append(e.event)))

    t.subscribe(adds)
    t.info("one")
    assert late == []
    t.info("two")
    assert late == ["info"]


def test_close_callbacks_run_once_in_order() -> None:
    t = lw.Transcript()
    ran: list[int] = []
    t.on_close(lambda: ran.append(1))
    t.on_close(lambda: ran.append(2))
    with lw.transcript_context(t):
        with lw.transcript_context(t):
            pass
        assert ran == []
    assert ran == [1, 2] and t._root.on_close == ()
    with lw.transcript_context(t):
        pass
    assert ran == [1, 2]
