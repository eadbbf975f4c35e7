"""A run leaves every context it entered, in every way it can end.

``run()``, ``RunScope``, ``transcript_context`` and the agent loop enter their contexts
with plain ``with`` statements and ``try``/``finally`` (no ``ExitStack``): an error or a
cancellation in the middle of a tool call must still restore every context variable of
loopwright to what it was before the run, a nested run (an agent used as a tool) too.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.stores import current_store
from loopwright.transcripts import current_transcript, on_transcript_open

call = lw.ModelOutput.for_tool_call


_UNSET = object()


def _value(var: contextvars.ContextVar[Any]) -> Any:
    try:
        return var.get()  # (its default where it is not set)
    except LookupError:
        return _UNSET


def values(*contexts: contextvars.Context) -> list[dict[str, Any]]:
    """Each context's value of every loopwright context variable set in any of them."""
    names = {v for c in contexts for v in c if v.name.startswith("loopwright")}
    return [{v.name: c.run(_value, v) for v in names} for c in contexts]


class Seen(lw.Hooks):
    async def on_run_start(self, state: lw.AgentState) -> None:
        pass


def agent(work: lw.Tool, *, nested: bool) -> lw.Agent:
    """An agent calling ``work``; ``nested``: an agent whose tool runs that agent in a
    run of its own, nested in the caller's (a span of it)."""
    model = lw.get_model("mock", outputs=[call(work.name, {})], repeat=True)
    worker = lw.react(name="worker", model=model, tools=[work], time_limit=60)
    if not nested:
        return worker

    @lw.tool
    async def delegate(q: str) -> str:
        """Delegate.

        Args:
            q: The question.
        """
        state = await lw.run(worker, q, limits=[lw.step_limit(5)], hooks=[Seen()])
        return state.output.text if state.output is not None else ""

    outer = lw.get_model("mock", outputs=[call("delegate", {"q": "go"})], repeat=True)
    return lw.react(name="outer", model=outer, tools=[delegate], max_steps=5)


async def approve_all(call: lw.ToolCall, messages: Any) -> lw.Approval:
    return lw.Approval(decision="approve")


async def run(root: lw.Agent, db: Path, inside: list[contextvars.Context]) -> lw.AgentState:
    return await lw.run(
        root,
        "go",
        model=lw.get_model("mock", outputs=["unused"]),
        db=db,
        limits=[lw.step_limit(20), lw.time_limit(60)],
        approval=approve_all,
        hooks=[Seen()],
    )


@pytest.mark.parametrize("nested", [False, True])
async def test_an_error_in_a_tool_restores_every_context(tmp_path: Path, nested: bool) -> None:
    inside: list[contextvars.Context] = []

    @lw.tool
    async def work() -> str:
        """Work."""
        inside.append(contextvars.copy_context())
        raise RuntimeError("a bug in the tool")

    before = contextvars.copy_context()
    with pytest.raises(RuntimeError, match="a bug in the tool"):
        await run(agent(work, nested=nested), tmp_path / "runs.db", inside)
    was, within, now = values(before, inside[0], contextvars.copy_context())
    # the run did set them (the last check can fail)
    assert within["loopwright_run_depth"] == (2 if nested else 1)
    assert within["loopwright_store"] is not None and within["loopwright_limits"]
    assert now == was


@pytest.mark.parametrize("nested", [False, True])
async def test_a_cancellation_in_a_tool_restores_every_context(
    tmp_path: Path, nested: bool
) -> None:
    inside: list[contextvars.Context] = []
    entered = asyncio.Event()

    @lw.tool
    async def work() -> str:
        """Work."""
        inside.append(contextvars.copy_context())
        entered.set()
        await asyncio.Event().wait()  # until cancelled
        return "never"

    async def cancelled() -> tuple[contextvars.Context, contextvars.Context]:
        before = contextvars.copy_context()
        try:
            await run(agent(work, nested=nested), tmp_path / "runs.db", inside)
        except asyncio.CancelledError:
            return before, contextvars.copy_context()
        raise AssertionError("the run was not cancelled")

    task = asyncio.create_task(cancelled())
    await entered.wait()
    task.cancel()
    before, after = await task
    was, within, now = values(before, inside[0], after)
    assert within["loopwright_run_depth"] == (2 if nested else 1)
    assert within["loopwright_transcript"] is not None and within["loopwright_limits"]
    assert now == was
    with lw.load_run(db=tmp_path / "runs.db") as log:
        assert log.info.status == "cancelled"


async def test_transcript_context_left_on_an_error_restores_every_context() -> None:
    """``transcript_context`` (try/finally, no ExitStack) puts back the current transcript,
    the model and tool hooks it installed and their mark, and closes the transcript."""
    t = lw.Transcript()
    closed: list[bool] = []
    t.on_close(lambda: closed.append(True))
    before = contextvars.copy_context()
    inside: list[contextvars.Context] = []

    def fail() -> None:
        with lw.transcript_context(t):
            inside.append(contextvars.copy_context())
            raise KeyError("x")

    with pytest.raises(KeyError):
        fail()
    was, within, now = values(before, inside[0], contextvars.copy_context())
    assert within["loopwright_transcript"] is not None and within["loopwright_model_hooks"]
    assert now == was
    assert closed == [True]


async def test_a_run_whose_transcript_fails_to_open_restores_every_context(
    tmp_path: Path,
) -> None:
    """The run scope's contexts (``_InForce``) entered in part: an opener of transcripts
    that raises while the run's transcript opens leaves the run's store set before it
    undone, and the run ends with the error."""

    def opener(t: lw.Transcript) -> None:
        raise LookupError("an opener that fails")

    stop = on_transcript_open(opener)
    before = contextvars.copy_context()
    model = lw.get_model("mock", outputs=["done"])
    try:
        with pytest.raises(LookupError, match="an opener that fails"):
            await lw.run(lw.react(model=model), "go", db=tmp_path / "runs.db")
    finally:
        stop()
    was, now = values(before, contextvars.copy_context())
    assert now == was
    assert current_store() is None and current_transcript() is None


def test_transcript_context_nested_in_itself_is_refused_and_leaves_it_in_force() -> None:
    t = lw.Transcript()
    context = lw.transcript_context(t)
    with context as entered:
        assert entered is t
        with pytest.raises(RuntimeError, match="entered already"):
            context.__enter__()
        assert current_transcript() is t and lw.transcript() is t
    assert current_transcript() is None
    with context:  # left: it may be entered again
        assert current_transcript() is t
    assert current_transcript() is None
