"""``WaitClock``: overlapping waits count once (``loopwright/_waits.py``)."""

from loopwright._waits import WaitClock


def test_overlapping_waits_count_once_and_never_exceed_the_time_that_passed() -> None:
    clock = WaitClock()
    assert clock.begin(now=10.0)  # the first wait starts the waiting
    assert not clock.begin(now=11.0)  # a second, at the same time
    assert not clock.end(now=12.0)  # one still waits
    assert clock.total(now=13.0) == 3.0  # 10 -> 13, the wait in progress included
    assert clock.end(now=14.0)  # the last one: working again
    assert clock.waited == 4.0  # 10 -> 14 once, not 4 + 1
    assert not clock.waiting_now


def test_separate_waits_add_up_and_reported_waits_are_added() -> None:
    clock = WaitClock()
    clock.begin(now=0.0)
    clock.end(now=1.5)
    clock.begin(now=5.0)
    clock.end(now=5.5)
    clock.add(0.25)  # e.g. waiting for an approval, reported after it
    clock.add(-1.0)  # nonsense is ignored
    assert clock.total(now=99.0) == 2.25


def test_an_end_without_a_begin_changes_nothing() -> None:
    clock = WaitClock()
    assert not clock.end(now=3.0)
    assert clock.waited == 0.0
    clock.begin(now=4.0)
    assert clock.waiting_now
