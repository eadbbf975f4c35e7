"""A store is made light until used: what a run that never touches it records, what one
that changes it late records, the first use from several threads at once, resume, fork."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import loopwright as lw
from loopwright.stores import Store
from loopwright.stores._store import _NO_DATA

call = lw.ModelOutput.for_tool_call
STEPS = 12


def _untouched(s: Store) -> bool:
    """Whether ``s`` holds nothing but its id (no table, journal or lock of its own)."""
    return (
        s._lock is None
        and s._journal is None
        and all(t is _NO_DATA for t in (s._data, s._before, s._read_since, s._committed))
    )


def _stepper(seen: list[Store], *, change_at: int | None = None) -> lw.ReactAgent:
    """An agent whose tool is called STEPS times; it keeps the store it ran in, and at
    ``change_at`` sets a key, then appends to it at each later step."""

    @lw.tool
    def work(i: int) -> str:
        """Do step i.

        Args:
            i: The step.
        """
        s = lw.store()  # (the object only: no method of it called)
        seen.append(s)
        if change_at is not None and i == change_at:
            s.set("found", {"at": [i]})
        elif change_at is not None and i > change_at:
            s.get("found")["at"].append(i)
        return f"did {i}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        return call("submit", {"answer": "ok"}) if done == STEPS else call("work", {"i": done})

    return lw.react(name="stepper", tools=[work], model=lw.get_model("mock", outputs=respond))


async def test_a_run_that_never_touches_its_store_records_no_store_change(
    tmp_path: Path,
) -> None:
    db, seen = tmp_path / "runs.db", []
    state = await lw.run(_stepper(seen), "Work.", db=db)
    assert state.completed == "submit" and len(seen) == STEPS
    [s] = set(seen)  # one store for the whole run
    assert _untouched(s)  # it never made a table, a journal or a lock
    [info] = lw.list_runs(db)
    assert info.store_id == s.id
    with lw.load_run(info.id, db) as log:
        events = list(log.events())
        assert log.store() == {}
    assert not [e for e in events if isinstance(e, lw.StoreEvent)]
    assert sum(isinstance(e, lw.ModelEvent) for e in events) == STEPS + 1


async def test_a_key_set_after_many_steps_is_recorded_as_its_change_only(
    tmp_path: Path,
) -> None:
    db, seen = tmp_path / "runs.db", []
    await lw.run(_stepper(seen, change_at=9), "Work.", db=db)
    [info] = lw.list_runs(db)
    with lw.load_run(info.id, db) as log:
        changes = [e for e in log.events() if isinstance(e, lw.StoreEvent)]
        assert log.store() == {"found": {"at": [9, 10, 11]}}
    assert {e.store for e in changes} == {info.store_id}
    assert [e.changes for e in changes] == [
        [{"op": "add", "path": "/found", "value": {"at": [9]}}],
        [{"op": "add", "path": "/found/at/1", "value": 10}],
        [{"op": "add", "path": "/found/at/2", "value": 11}],
    ]
    # after its last checkpoint the store holds its data and lock, no table of changes
    s = seen[-1]
    assert s._journal is None and s._before is _NO_DATA and s._read_since is _NO_DATA
    assert s._lock is not None and not s.dirty


def test_a_store_that_stops_changing_gives_its_tables_of_changes_up() -> None:
    s = Store()
    s.set("n", 1)
    s.set("model", lw.UserMessage(content="hi"))  # neither tracked nor immutable
    assert s.checkpoint()[0] == {"op": "add", "path": "/n", "value": 1}
    assert s._before is _NO_DATA and s._journal is None and s.checkpoint() == []
    assert s["model"].content == "hi"  # read: looked at again at the next checkpoint
    assert s.dirty and s.checkpoint() == [] and not s.dirty
    # another store still has nothing: the shared empty table was never written
    other = Store()
    assert len(other) == 0 and "n" not in other and _untouched(other)
    with pytest.raises(TypeError, match="never written"):
        _NO_DATA["x"] = 1
    assert len(_NO_DATA) == 0


@pytest.fixture
def slow_lock_making(monkeypatch: pytest.MonkeyPatch) -> None:
    """Making an RLock takes a while: a thread that found no lock is switched out before
    it can set one, so unguarded making would give a store several locks."""
    real = threading.RLock

    def slow() -> Any:
        time.sleep(0.02)
        return real()

    monkeypatch.setattr(threading, "RLock", slow)  # (as the store module sees it)


def _at_once(threads: int, fn: Any) -> list[Any]:
    """``fn(i)`` in ``threads`` real threads released together; their results."""
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads

    def run(i: int) -> None:
        barrier.wait()
        results[i] = fn(i)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return results


@pytest.mark.usefixtures("slow_lock_making")
def test_threads_first_using_a_store_at_once_make_one_lock_and_lose_no_change() -> None:
    def first_set(s: Store, i: int) -> Any:
        s.set(f"k{i}", i)
        return s._lock

    for _ in range(3):
        s = Store()
        locks = _at_once(8, functools.partial(first_set, s))
        assert len({id(lock) for lock in locks}) == 1 and locks[0] is s._lock
        ops = s.checkpoint()
        assert sorted(op["path"] for op in ops) == sorted(f"/k{i}" for i in range(8))
        assert s.to_dict() == {f"k{i}": i for i in range(8)}


@pytest.mark.usefixtures("slow_lock_making")
def test_threads_first_reading_a_store_at_once_make_one_lock() -> None:
    s = Store()
    locks = _at_once(8, lambda i: (s.get(f"k{i}"), s._lock)[1])
    assert len({id(lock) for lock in locks}) == 1 and locks[0] is not None


def test_threads_changing_a_list_at_once_after_a_checkpoint_fill_one_journal() -> None:
    s = Store({"items": []})
    s.checkpoint()
    assert s._journal is None
    items = s.get("items")
    _at_once(8, lambda i: [items.append(i * 100 + n) for n in range(50)])
    ops = s.checkpoint()
    assert len(ops) == 400 and {op["op"] for op in ops} == {"add"}
    assert sorted(op["value"] for op in ops) == sorted(s["items"])
    # the patch replays to the store's content: each add at the index it was made at
    assert [op["path"] for op in ops] == [f"/items/{i}" for i in range(400)]


def _resumable(hang: asyncio.Event | None, seen: list[Store], *, change: bool) -> lw.ReactAgent:
    @lw.tool
    async def work(i: int) -> str:
        """Do step i.

        Args:
            i: The step.
        """
        s = lw.store()
        seen.append(s)
        if change:
            s.set("done", i)
        if hang is not None and i == 2:
            hang.set()
            await asyncio.sleep(3600)
        if change and i == 3:  # (in the resumed part)
            s.set("seen", {"id": s.id, "data": s.to_dict()})
        return f"did {i}"

    def respond(messages: Any, tools: Any, config: Any) -> lw.ModelOutput:
        done = sum(1 for m in messages if isinstance(m, lw.ToolMessage))
        return call("submit", {"answer": "ok"}) if done == 4 else call("work", {"i": done})

    return lw.react(name="worker", tools=[work], model=lw.get_model("mock", outputs=respond))


@pytest.mark.parametrize("change", [True, False])
async def test_a_resumed_run_has_its_recorded_store_under_its_recorded_id(
    tmp_path: Path, change: bool
) -> None:
    db, hang, seen = tmp_path / "runs.db", asyncio.Event(), list[Store]()
    task = asyncio.create_task(lw.run(_resumable(hang, seen, change=change), "Work.", db=db))
    await hang.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = lw.list_runs(db)
    seen.clear()
    state = await lw.resume(info.id, agent=_resumable(None, seen, change=change), db=db)
    assert state.completed == "submit"
    [after] = lw.list_runs(db)
    assert after.store_id == info.store_id
    with lw.load_run(info.id, db) as log:
        changes = [e for e in log.events() if isinstance(e, lw.StoreEvent)]
        final = log.store()
    [s] = set(seen)  # the resumed part's store
    assert s.id == info.store_id
    if not change:
        assert changes == [] and final == {} and _untouched(s)
        return
    assert {e.store for e in changes} == {info.store_id}
    # the resumed part started from the recorded store (done: 1, the killed call's
    # change unrecorded) and records replacements of it
    assert final["seen"] == {"id": info.store_id, "data": {"done": 3}}
    assert final["done"] == 3
    resumed_ops = [op for e in changes for op in e.changes if op["path"] == "/done"]
    assert [op["op"] for op in resumed_ops] == ["add", "replace", "replace", "replace"]


async def test_fork_of_an_untouched_store_gives_branches_their_own_stores() -> None:
    def agent(tag: str) -> lw.Agent:
        async def run(state: lw.AgentState) -> lw.AgentState:
            s = lw.store()
            if tag == "writer":
                s.set("tag", tag)
            return state

        run.__name__ = tag
        return run

    parent, t = Store(), lw.Transcript()
    with lw.store_context(parent), lw.transcript_context(t):
        await lw.fork(lw.AgentState(), [agent("reader"), agent("writer")])
    assert len(parent) == 0 and not parent.dirty
    reader, writer = [e for e in t.events if isinstance(e, lw.SubtaskEvent)]
    assert reader.events == []  # an empty copy: nothing to record
    [event] = writer.events
    assert isinstance(event, lw.StoreEvent)
    assert event.changes == [{"op": "add", "path": "/tag", "value": "writer"}]
    assert event.store not in (parent.id, None)


def test_a_store_is_not_copied_used_or_not() -> None:
    """Copying or pickling a store fails at once, used or not (it always failed for a
    used one, on its lock); a weak reference to one can be made, as before."""
    import copy
    import pickle
    import weakref

    used = Store({"k": 1})
    for s in (Store(), used):
        for how in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="not copied or pickled"):
                how(s)
    ref = weakref.ref(used)
    assert ref() is used
    copied = Store(used.to_dict())  # the way to copy one
    copied.set("j", 2)
    assert copied.to_dict() == {"k": 1, "j": 2} and used.to_dict() == {"k": 1}
