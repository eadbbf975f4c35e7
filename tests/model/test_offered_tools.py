"""A model's calls that offer the same tools share one list of them (a live run keeps
every call's list in its ``ModelEvent``); the list refuses changes, so sharing it cannot
corrupt another call's record, and new tools make a new list."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest

import loopwright as lw
from loopwright.model._offered import OfferedTools
from loopwright.transcripts import event_data
from tests._tools import CallRecorder, add, sub

HI: list[lw.ChatMessage] = [lw.UserMessage(content="hi")]


async def _model_events(*offers: list[lw.Tool] | list[lw.ToolInfo]) -> list[lw.ModelEvent]:
    model = lw.get_model("mock", outputs=["ok"], repeat=True)
    async with lw.recording(db=False) as rec:
        for tools in offers:
            await model.generate(HI, tools)
    events = [e for e in rec.transcript.events if isinstance(e, lw.ModelEvent)]
    assert len(events) == len(offers)
    return events


async def test_calls_offering_the_same_tools_share_one_list() -> None:
    model = lw.get_model("mock", outputs=["ok"], repeat=True)
    seen = CallRecorder()
    offered = [add, sub]
    with lw.model_hook(seen):
        for _ in range(3):
            await model.generate(HI, offered)
        await model.generate(HI, list(offered))  # another list of the same tools
    first = seen.calls[0].tools
    assert isinstance(first, OfferedTools) and first == [add.info, sub.info]
    assert all(c.tools is first for c in seen.calls)


async def test_the_events_of_such_calls_share_it_and_it_refuses_changes() -> None:
    one, two = await _model_events([add], [add])
    assert one.tools is two.tools and one.tools == [add.info]
    changes: list[Callable[[list[lw.ToolInfo]], object]] = [
        lambda t: t.append(sub.info),
        lambda t: t.extend([sub.info]),
        lambda t: t.insert(0, sub.info),
        lambda t: t.remove(add.info),
        lambda t: t.pop(),
        lambda t: t.clear(),
        lambda t: t.sort(key=lambda i: i.name),
        lambda t: t.reverse(),
        lambda t: t.__setitem__(0, sub.info),
        lambda t: t.__delitem__(0),
        lambda t: t.__iadd__([sub.info]),
        lambda t: t.__imul__(2),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="change a copy"):
            change(one.tools)
    with pytest.raises(TypeError):
        one.tools += [sub.info]
    assert one.tools == [add.info] and two.tools is one.tools


async def test_new_tools_make_a_new_list_and_leave_the_old_one_as_it_was() -> None:
    offered: list[lw.Tool] = [add]
    one, two, three = await _model_events(offered, [add, sub], offered)
    assert one.tools == [add.info] and two.tools == [add.info, sub.info]
    assert three.tools == [add.info] and three.tools is not two.tools
    # the same list given again after it changed in place: what it holds now
    offered.append(sub)
    model = lw.get_model("mock", outputs=["ok"], repeat=True)
    seen = CallRecorder()
    with lw.model_hook(seen):
        await model.generate(HI, offered[:1])
        offered_now = offered[:1]
        await model.generate(HI, offered_now)
        offered_now.append(sub)
        await model.generate(HI, offered_now)
    assert seen.calls[0].tools is seen.calls[1].tools == [add.info]
    assert seen.calls[2].tools == [add.info, sub.info]


async def test_equal_but_other_tool_infos_are_not_taken_for_the_same() -> None:
    info = add.info
    again = info.model_copy(deep=True)
    assert again == info and again is not info
    one, two, none = await _model_events([info], [again], [])
    assert one.tools is not two.tools and two.tools[0] is again
    assert none.tools == [] and isinstance(none.tools, OfferedTools)


async def test_copies_are_plain_lists_and_the_rows_are_those_of_a_plain_list() -> None:
    (ev,) = await _model_events([add, sub])
    assert isinstance(ev.tools, OfferedTools)
    for made in (
        copy.copy(ev.tools),
        copy.deepcopy(ev.tools),
        pickle.loads(pickle.dumps(ev.tools)),
        list(ev.tools),
        ev.tools[:],
    ):
        assert type(made) is list and made == ev.tools
    made = list(ev.tools)
    made.append(add.info)  # a copy changes freely
    plain = copy.copy(ev)
    plain.tools = list(ev.tools)
    assert event_data(ev) == event_data(plain)
    assert copy.deepcopy(ev).tools == ev.tools


async def test_the_working_time_is_the_duration_itself_when_nothing_waited() -> None:
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2})])
    async with lw.recording(db=False) as rec:
        out = await model.generate(HI, [add])
        await lw.execute_tools(out.message, [add])
    model_ev, tool_ev = [e for e in rec.transcript.events if e.event in ("model", "tool")]
    assert isinstance(model_ev, lw.ModelEvent) and isinstance(tool_ev, lw.ToolEvent)
    # a free connection slot is no wait: nothing waited, no float made for it
    assert model_ev.wait_time == 0.0 and model_ev.duration > 0
    assert model_ev.working_time is model_ev.duration
    assert tool_ev.duration > 0 and tool_ev.working_time is tool_ev.duration


class _OfferSub:
    """A hook that offers one more tool by assigning another list (the shared one
    refuses changes)."""

    def before_generate(self, call: lw.ModelCall) -> None:
        with pytest.raises(TypeError):
            call.tools.append(sub.info)  # type: ignore[attr-defined]
        call.tools = [*call.tools, sub.info]

    def after_generate(self, call: lw.ModelCall) -> None:
        pass


@pytest.mark.parametrize("protocol", ["native", "react", "json"])
async def test_a_hook_offering_other_tools_reaches_every_protocol(protocol: str) -> None:
    seen: list[str] = []

    def answer(
        messages: list[lw.ChatMessage], tools: list[lw.ToolInfo], _: lw.GenerateConfig
    ) -> str:
        seen.append(" ".join(t.name for t in tools) + " " + str(messages[0].content))
        return "Thought: done\nFinal Answer: ok" if protocol == "react" else "ok"

    model = lw.get_model("mock/m", outputs=answer, tool_protocol=protocol)
    with lw.model_hook(_OfferSub()):
        await model.generate(HI, [add])
    assert "sub" in seen[0] and "add" in seen[0]
