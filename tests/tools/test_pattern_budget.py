"""The pattern matching of one model reply's calls is bounded in all, not per call
(``loopwright._patterns.reply_patterns``, ``tools/_bind_call.py``).

A schema from elsewhere with ``^(a|a)+$`` cost each call 0.5 s of matching: a reply of
64 such calls held the event loop for half a minute (500 calls, minutes), and the run's
time limit could not fire until they were all checked. Now the calls of a reply share
2 s, the calls after that are refused saying why, a check that takes long is made in
a worker thread (the event loop goes on: the time limit fires, cancellation arrives),
and a cancelled check stops at its next match.

The counts below are what the bound means: a call that has its budget spent is refused
at once, so at most ``REPLY_BUDGET / BUDGET`` (4) calls of a reply are refused for
their own 0.5 s, whatever their number (no figure of time is asserted)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import loopwright as lw
from loopwright import _patterns
from loopwright.model.providers import _grammar

from .._pattern_spy import Spy

HOSTILE = "a" * 40 + "!"
OWN = "matching took over 0.5 seconds"
REPLY = "this reply's calls took over 2 seconds in all matching patterns"
pytestmark = pytest.mark.timeout(180)


def echo(**kwargs: Any) -> str:
    return "ran " + repr(sorted(kwargs.items()))


def word_tool(name: str, pattern: str | None, *, parallel: bool = False) -> lw.Tool[..., Any]:
    w: dict[str, Any] = {"type": "string"} if pattern is None else {"pattern": pattern}
    params = {"type": "object", "properties": {"w": w}}
    return lw.Tool.from_info(lw.ToolInfo(name=name, parameters=params), echo, parallel=parallel)


def reply(*calls: tuple[str, dict[str, Any]]) -> lw.ModelOutput:
    made = [lw.ToolCall(id=f"c{i}", function=n, arguments=a) for i, (n, a) in enumerate(calls)]
    message = lw.AssistantMessage(tool_calls=made)
    return lw.ModelOutput(message=message, stop_reason="tool_calls")


def results(state: lw.AgentState) -> list[lw.ToolMessage]:
    return [m for m in state.messages if isinstance(m, lw.ToolMessage)]


@pytest.mark.parametrize("parallel", [False, True])
async def test_the_calls_of_one_reply_share_one_budget(parallel: bool) -> None:
    """60 hostile calls in one reply (a reply holds at most 64 calls unless the model's
    config says more): at most four are refused for their own 0.5 s, the
    others because the reply's 2 s are spent; a tool with an ordinary pattern is
    refused too in that reply (its check could not be made), a tool without patterns
    runs; the next reply has a budget of its own."""
    hostile = word_tool("u", "^(a|a)+$", parallel=parallel)
    ordinary = word_tool("fine", "^[a-z]+$", parallel=parallel)
    plain = word_tool("plain", None, parallel=parallel)
    many = [("u", {"w": HOSTILE})] * 60
    model = lw.get_model(
        "mock",
        outputs=[
            reply(*many, ("fine", {"w": "abc"}), ("plain", {"w": "abc"})),
            reply(("fine", {"w": "abc"})),
            "done.",
        ],
    )
    state = await lw.run(
        lw.react(tools=[hostile, ordinary, plain], submit=False),
        "go",
        model=model,
        limits=[lw.time_limit(150)],
        db=False,
    )
    assert state.completed == "answer" and state.limit is None
    *checked, fine, ran, fine_later = results(state)
    assert len(checked) == 60
    for result in checked:
        assert result.error is not None and result.error.type == "validation", result.content
        assert f"could not check the argument {HOSTILE!r} against its pattern" in result.content
    own = [r for r in checked if OWN in r.content]
    spent = [r for r in checked if REPLY in r.content]
    assert 1 <= len(own) <= 4 and len(own) + len(spent) == 60
    assert fine.error is not None and REPLY in fine.content
    assert ran.error is None and ran.content == "ran [('w', 'abc')]"
    assert fine_later.error is None and fine_later.content == "ran [('w', 'abc')]"


async def test_a_time_limit_ends_the_checks_of_a_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the reply's bound (made huge here), only the run's time limit stops 64
    hostile calls: it fires while a check runs (in a worker thread, the event loop
    free), after a few of them, and the thread's check ends with its match."""
    monkeypatch.setattr(_patterns, "REPLY_BUDGET", 1000.0, raising=False)
    spy = Spy(monkeypatch)
    model = lw.get_model("mock", outputs=[reply(*[("u", {"w": HOSTILE})] * 64), "done."])
    state = await lw.run(
        lw.react(tools=[word_tool("u", "^(a|a)+$")], submit=False),
        "go",
        model=model,
        limits=[lw.time_limit(1.5)],
        db=False,
    )
    assert state.completed == "limit" and state.limit is not None
    assert state.limit.type == "time"
    begun = await spy.settled()
    # each call's check is one match (of at most 0.5 s) on the loop's slice, then one
    # in a thread: 1.5 s is a few of them, not one or two for each of the 64 calls
    assert 1 <= begun <= 16, begun
    assert spy.long_off_loop >= 1 and spy.long_on_loop == 0  # the loop was free


async def test_a_cancelled_reply_stops_its_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_patterns, "REPLY_BUDGET", 1000.0, raising=False)
    spy = Spy(monkeypatch)
    message = reply(*[("u", {"w": HOSTILE})] * 64).message
    task = asyncio.create_task(lw.execute_tools(message, [word_tool("u", "^(a|a)+$")]))
    for _ in range(200):  # until a check runs in its thread, the event loop free
        await asyncio.sleep(0.05)
        if spy.running and spy.begun >= 2:
            break
    assert spy.running and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await spy.settled() <= 4, spy.begun  # the running match ended; none after


def test_a_check_off_the_loop_refuses_its_next_match_once_stopped() -> None:
    """A check in a worker thread that outlives its caller refuses its next match."""
    seen: list[str] = []

    def check() -> None:
        with _patterns.bounded_patterns():
            for _ in range(3):
                try:
                    _patterns.search("b+", "abba")
                    seen.append("matched")
                except _patterns.PatternUnchecked as ex:
                    seen.append(ex.why)
                stopped.wait(5)

    stopped = threading.Event()
    with _patterns.reply_patterns():
        off = _patterns.OffLoop()
        thread = threading.Thread(target=off.run, args=(check,))
        thread.start()
        off.stop()
        stopped.set()
    thread.join(10)
    assert seen[-1] == "the check was stopped (its run was cancelled or reached a limit)"
    assert seen.count(seen[-1]) >= 2


def test_a_local_models_reply_check_stops_when_its_call_is_cancelled() -> None:
    schema = {"type": "object", "properties": {"w": {"type": "string", "pattern": "^a+$"}}}
    cancel = threading.Event()
    assert _grammar.schema_problem('{"w": "aaa"}', schema, cancel) is None
    cancel.set()
    problem = _grammar.schema_problem('{"w": "aaa"}', schema, cancel)
    assert problem is not None and "the check was stopped" in problem
