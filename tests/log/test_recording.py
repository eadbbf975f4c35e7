import asyncio
import json
import os
import sqlite3
import warnings
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.transcripts import event_data

from ._scripted import hand_loop, script, shape


def dumped(events: list[lw.Event]) -> list[dict[str, object]]:
    return [event_data(e, exclude={"events"}) for e in events]


async def test_a_run_round_trips_through_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=script(4))
    async with lw.recording(name="counter", model="mock", input="Count up.", db=db) as rec:
        with lw.span("work"):
            messages, out = await hand_loop(model)
        lw.transcript().info({"note": "finished", "n": 3})
        lw.store().set("answer", out.text)
        rec.finish(output=out, messages=messages)
    live = list(rec.transcript.walk())
    assert rec.status == "success"

    [info] = lw.list_runs(db)
    assert (info.id, info.name, info.model, info.status) == (
        rec.run_id,
        "counter",
        "mock",
        "success",
    )
    assert info.input == "Count up." and info.finished is not None and info.finished >= info.created
    assert isinstance(info.output, dict) and info.output["message"]["content"] == out.text
    with lw.load_run(rec.run_id, db) as log:
        events = list(log.events())
        assert dumped(events) == dumped(live)
        assert [e.event for e in events].count("model") == 4
        assert [e.event for e in events].count("tool") == 3
        assert shape(log.messages()) == shape(messages)
        assert log.store() == rec.store.to_dict() == {"sums": [1, 2, 3], "answer": out.text}
        model_events = [e for e in events if isinstance(e, lw.ModelEvent)]
        assert [m.id for m in log.model_input(model_events[-1])] == [m.id for m in messages[:-1]]
        # the tree is the live transcript's shape
        tree = log.tree()
        assert [e.event for e in tree] == [e.event for e in rec.transcript.events]
        begin = tree[0]
        assert isinstance(begin, lw.SpanBegin) and begin.name == "work"
        tools = [e for e in tree if isinstance(e, lw.ToolEvent)]
        assert [[c.event for c in t.events] for t in tools] == [["store"]] * 3
        assert log.info.samples == 0 and log.samples == []


async def test_each_message_is_written_once_and_events_refer_to_ids(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=script(5))
    async with lw.recording(db=db) as rec:
        messages, _ = await hand_loop(model)
        rec.finish(messages=messages)
    conn = sqlite3.connect(db)
    ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE run_id = ?", (rec.run_id,))]
    assert sorted(ids) == sorted(m.id for m in messages)
    for (data,) in conn.execute("SELECT data FROM events WHERE type = 'model'"):
        event = json.loads(data)
        assert event["output"]["message"] == {"$ref": event["output"]["message"]["$ref"]}
        assert all(isinstance(i, str) for i in event.get("input", []))
    conn.close()


async def test_an_error_ends_the_run_as_error_with_an_error_event(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    rec = lw.recording(db=db)
    with pytest.raises(RuntimeError, match="agent bug"):
        async with rec:
            raise RuntimeError("agent bug")
    with lw.load_run(rec.run_id, db) as log:
        assert log.info.status == "error" and log.info.error == "RuntimeError: agent bug"
        last = list(log.events())[-1]
        assert isinstance(last, lw.ErrorEvent) and last.error == "RuntimeError"
        assert last.traceback is not None and "agent bug" in last.traceback


async def test_a_limit_ends_the_run_as_limit_with_a_limit_event(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = lw.get_model("mock", outputs=script(5))
    rec = lw.recording(db=db)

    async def limited() -> None:
        async with rec:
            with lw.step_limit(2):
                await hand_loop(model)

    with pytest.raises(lw.LimitExceededError):
        await limited()
    with lw.load_run(rec.run_id, db) as log:
        info = log.info
        assert info.status == "limit" and info.limit is not None and info.limit["type"] == "step"
        limit = [e for e in log.events() if isinstance(e, lw.LimitEvent)]
        assert [(e.type, e.limit) for e in limit] == [("step", 2)]


async def test_finish_with_a_limit_and_cancellation(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(db=db) as rec:
        rec.finish(limit=lw.LimitInfo(type="token", limit=10, value=12, message="too many"))
    assert lw.load_run(rec.run_id, db).info.status == "limit"

    async def cancelled() -> None:
        async with lw.recording(db=db) as inner:
            started.set()
            runs.append(inner)
            await asyncio.sleep(30)

    started, runs = asyncio.Event(), []
    task = asyncio.create_task(cancelled())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lw.load_run(runs[0].run_id, db).info.status == "cancelled"


async def test_a_recording_inside_a_recording_is_a_span_of_the_outer_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    async with lw.recording(name="outer", db=db) as outer:
        lw.store().set("shared", 1)
        async with lw.recording(name="inner", db=db) as inner:
            assert inner.nested and inner.run_id == outer.run_id
            assert lw.store().get("shared") == 1
            lw.transcript().info("inside")
        async with lw.recording(name="separate", db=db, new_run=True) as separate:
            assert not separate.nested and separate.run_id != outer.run_id
    assert {r.name for r in lw.list_runs(db)} == {"outer", "separate"}
    with lw.load_run(outer.run_id, db) as log:
        kinds = [(e.event, getattr(e, "name", None)) for e in log.events()]
    assert ("span_begin", "inner") in kinds and ("info", None) in kinds


async def test_samples_have_their_own_streams_stores_and_rows(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    async def item(rec: lw.RunScope, i: int) -> None:
        model = lw.get_model("mock", outputs=script(i + 2))
        async with rec.sample(f"item-{i}", input=f"count {i}", target=i) as s:
            assert lw.transcript() is s.transcript and lw.store() is s.store
            messages, out = await hand_loop(model)
            s.finish(output=out.text, messages=messages, scores={"match": i % 2})

    async with lw.recording(name="eval", db=db) as rec:
        await asyncio.gather(*(item(rec, i) for i in range(3)))
        with pytest.raises(ValueError):
            async with rec.sample("broken"):
                raise ValueError("bad item")
    with lw.load_run(rec.run_id, db) as log:
        samples = log.samples
        assert [s.id for s in samples] == ["item-0", "item-1", "item-2", "broken"]
        assert [s.status for s in samples] == ["success"] * 3 + ["error"]
        assert [s.scores for s in samples[:3]] == [{"match": 0}, {"match": 1}, {"match": 0}]
        assert samples[2].target == 2 and samples[2].output == "done after 4 steps"
        assert log.info.samples == 4
        for i, s in enumerate(samples[:3]):
            models = [e for e in log.events(s) if isinstance(e, lw.ModelEvent)]
            assert len(models) == i + 2
            assert log.store(s.id) == {"sums": list(range(1, i + 2))}
            assert log.messages(s)[-1].text == f"done after {i + 2} steps"
        assert list(log.events()) == []  # nothing happened outside the samples
        with pytest.raises(lw.RunStoreError, match="no sample"):
            log.store("nope")


async def test_reading_while_the_run_is_still_going(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    release = asyncio.Event()
    entered = asyncio.Event()

    @lw.tool
    async def slow() -> str:
        """Waits to be released."""
        entered.set()
        await release.wait()
        return "released"

    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("slow"), "ok"])

    def read() -> tuple[str, list[tuple[str, bool | None]], list[str]]:
        with lw.load_run(None, db) as log:
            events = [(e.event, getattr(e, "pending", None)) for e in log.events()]
            return log.info.status, events, [m.role for m in log.messages()]

    async with lw.recording(db=db) as rec:
        messages = [lw.UserMessage(content="go")]
        out = await model.generate(messages)
        messages.append(out.message)
        lw.store().set("phase", "calling")
        task = asyncio.create_task(lw.execute_tools(out.message, [slow]))
        await entered.wait()
        await rec.flush()
        status, events, roles = await asyncio.to_thread(read)
        assert status == "running"
        assert events == [("model", None), ("store", None), ("tool", True)]
        assert roles == ["user", "assistant"]  # from the events: the run has not said yet
        release.set()
        messages.extend(await task)
        await rec.flush()
        status, events, _ = await asyncio.to_thread(read)
        assert events[-1] == ("tool", None)
    status, _, _ = await asyncio.to_thread(read)
    assert status == "success"


async def test_a_run_kept_in_memory_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with lw.recording(db=False) as rec:
        lw.transcript().info("x")
    assert rec.db_path is None and os.listdir(tmp_path) == []
    assert len(rec.transcript.events) == 1


async def test_the_default_store_is_the_env_variable_or_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPWRIGHT_DB", raising=False)
    async with lw.recording() as rec:
        pass
    assert rec.db_path == Path("loopwright-runs.db") and (tmp_path / "loopwright-runs.db").exists()
    monkeypatch.setenv("LOOPWRIGHT_DB", str(tmp_path / "elsewhere" / "x.db"))
    async with lw.recording() as rec2:
        pass
    assert [r.id for r in lw.list_runs()] == [rec2.run_id]
    conn = sqlite3.connect(tmp_path / "elsewhere" / "x.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_an_unwritable_store_fails_at_the_start(tmp_path: Path) -> None:
    (tmp_path / "a-directory.db").mkdir()
    with pytest.raises(lw.RunStoreError, match="cannot open the run store"):
        async with lw.recording(db=tmp_path / "a-directory.db"):
            pytest.fail("the block must not run")
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("just text, not a database " * 100)
    with pytest.raises(lw.RunStoreError):
        async with lw.recording(db=not_sqlite):
            pass


def test_loading_unknown_runs_and_stores_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(lw.RunStoreError, match="no run store"):
        lw.list_runs(tmp_path / "missing.db")

    async def make() -> list[str]:
        ids = []
        for _ in range(2):
            async with lw.recording(db=tmp_path / "r.db") as rec:
                pass
            ids.append(rec.run_id)
        return ids

    first, second = asyncio.run(make())
    with pytest.raises(lw.RunStoreError, match="no run 'zzz'"):
        lw.load_run("zzz", tmp_path / "r.db")
    assert lw.load_run(None, tmp_path / "r.db").run_id == second  # latest
    n = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    shared = first[:n]
    assert lw.load_run(first[: len(shared) + 1], tmp_path / "r.db").run_id == first
    with pytest.raises(lw.RunStoreError, match="matches several runs"):
        lw.load_run(shared, tmp_path / "r.db")
    assert [r.id for r in lw.list_runs(tmp_path / "r.db", limit=1)] == [second]


async def test_what_is_recorded_after_a_run_closed_is_not_sent_to_its_closed_writer(
    tmp_path: Path,
) -> None:
    async with lw.recording(name="x", db=tmp_path / "runs.db") as rec:
        rec.transcript.info("during")
    assert not rec.transcript._root.event_subscribers
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failing subscriber warns
        rec.transcript.info("after")  # e.g. from a task the run started


def test_list_runs_limits_interrupted_and_running_runs_after_telling_them_apart(
    tmp_path: Path,
) -> None:
    import socket
    import subprocess
    import sys

    db = tmp_path / "runs.db"
    done = lw.ModelOutput.for_tool_call("submit", {"answer": "x"})
    lw.run_sync(lw.react(), "t", model=lw.get_model("mock", outputs=[done]), db=db)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(gone.stdout)
    conn = sqlite3.connect(db)
    # the oldest: running in this process; two newer ones whose process is gone
    for i, pid in enumerate([os.getpid(), dead_pid, dead_pid]):
        conn.execute(
            "INSERT INTO runs (id, name, status, created, host, pid) "
            "VALUES (?, 'r', 'running', ?, ?, ?)",
            (f"run{i}", 1000.0 + i, socket.gethostname(), pid),
        )
    conn.commit()
    conn.close()
    assert [r.id for r in lw.list_runs(db, status="running", limit=1)] == ["run0"]
    assert [r.id for r in lw.list_runs(db, status="interrupted", limit=1)] == ["run2"]
