"""A run told of its nested runs' limits keeps them in a list that grows by appending
(house rule: no step costs more as the run goes on), and keeps nothing when told nothing."""

from __future__ import annotations

from loopwright._limit_text import LimitInfo
from loopwright.log import RunEnd
from loopwright.runtime._ending import ScopeEnding


def test_told_is_one_list_appended_to() -> None:
    outer = ScopeEnding(None, 1)
    assert outer.told is None and outer.said is None
    first: list[object] | None = None
    for n in range(50):
        inner = ScopeEnding(outer, 2)
        info = LimitInfo(type="step", limit=1, value=1, message=f"limit {n}")
        inner.said = [info]
        inner.row = RunEnd(status="limit")
        inner.leave(None, pass_limit=True)
        if first is None:
            first = outer.told
        assert outer.told is first  # the same list, appended to (not a copy per tell)
    assert outer.told is not None and len(outer.told) == 50
