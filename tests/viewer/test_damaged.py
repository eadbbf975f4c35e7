"""The viewer over a run store with a damaged row: the runs list shows it, with why, and
the other runs; opening it is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopwright.viewer._data import DAMAGED

from ._store import IMG, SHORT_IMG, damaged_store, make_store
from .conftest import start_viewer


def test_the_runs_list_shows_a_damaged_row_and_the_others(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    ids = damaged_store(db)
    proc, url = start_viewer(db)
    try:
        api = url.rstrip("/") + "/api/"
        listed = httpx.get(api + "runs", timeout=30)
        assert listed.status_code == 200, listed.text
        runs = {r["id"]: r for r in listed.json()["runs"]}
        assert set(runs) == {ids["good"], ids["bad"]}
        assert runs[ids["good"]]["status"] == "success"
        bad = runs[ids["bad"]]
        assert bad["status"] == "damaged" and bad["name"] == IMG
        assert bad["error"] == f"its created: a time that is not a number: {SHORT_IMG!r}"
        assert bad["created"] == "1970-01-01T00:00:00+00:00"
        damaged = httpx.get(api + "runs", params={"status": "damaged"}, timeout=30).json()
        assert [r["id"] for r in damaged["runs"]] == [ids["bad"]]
        success = httpx.get(api + "runs", params={"status": "success"}, timeout=30).json()
        assert [r["id"] for r in success["runs"]] == [ids["good"]]
        # opening it: one clear error, as JSON
        opened = httpx.get(api + f"runs/{ids['bad']}", timeout=30)
        assert opened.status_code == 500 and "its created" in opened.json()["error"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_damaged_event_row_hides_no_other_event(tmp_path: Path) -> None:
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    ids = make_store(db)
    close_idle_files()
    with sqlite3.connect(db) as conn:  # a row cut short (a disk that lost its end)
        [(seq, bad)] = conn.execute(
            "SELECT seq, id FROM events WHERE run_id = ? AND type = 'info' ORDER BY seq LIMIT 1",
            (ids["run"],),
        ).fetchall()
        conn.execute('UPDATE events SET data = \'{"id": "x", \' WHERE id = ?', (bad,))
        total = conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", (ids["run"],))
        [(count,)] = total.fetchall()
    proc, url = start_viewer(db)
    try:
        path = url.rstrip("/") + f"/api/runs/{ids['run']}/events"
        page = httpx.get(path, params={"limit": 500}, timeout=30)
        assert page.status_code == 200, page.text
        events = page.json()["events"]
        assert len(events) == count  # every event, the damaged one in its place
        [damaged] = [e for e in events if e["seq"] == seq]
        assert damaged["source"] == DAMAGED and "cannot be read" in damaged["data"]["error"]
        # a link to it, and a live page's refresh of it, answer too
        assert httpx.get(path, params={"event": bad}, timeout=30).status_code == 200
        refreshed = httpx.get(path, params={"refresh": bad}, timeout=30).json()["refreshed"]
        assert [e["source"] for e in refreshed] == [DAMAGED]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_conversation_page_reads_only_its_own_messages(tmp_path: Path) -> None:
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    run = make_store(db)["run"]
    close_idle_files()
    with sqlite3.connect(db) as conn:  # its first message (the system prompt) damaged
        [(ids,)] = conn.execute("SELECT messages FROM runs WHERE id = ?", (run,)).fetchall()
        first = json.loads(ids)[0]
        conn.execute("UPDATE messages SET data = '{' WHERE run_id = ? AND id = ?", (run, first))
    proc, url = start_viewer(db)
    try:
        path = url.rstrip("/") + f"/api/runs/{run}/conversation"
        later = httpx.get(path, params={"offset": 1, "limit": 3}, timeout=30)
        assert later.status_code == 200, later.text
        assert later.json()["messages"][0]["content"] == "Find cats."
        assert later.json()["total"] == len(json.loads(ids))
        first_page = httpx.get(path, timeout=30)  # the damaged one in its place
        assert first_page.status_code == 200, first_page.text
        [damaged, *rest] = first_page.json()["messages"]
        assert damaged["role"] == "damaged" and "cannot be read" in damaged["content"]
        assert rest[0]["content"] == "Find cats."
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_running_runs_conversation_is_read_from_its_end(tmp_path: Path) -> None:
    import sqlite3

    import loopwright as lw
    from loopwright.log import last_messages, samples_page
    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    ids = make_store(db)
    close_idle_files()
    with sqlite3.connect(db) as conn:  # as a run still going: no final messages yet
        conn.execute("UPDATE runs SET messages = NULL, status = 'running', pid = NULL")
        conn.execute("UPDATE samples SET messages = NULL")
    seen = 0
    for run in ids.values():  # the same conversation as RunLog.messages makes it
        with lw.load_run(run, db) as log:
            keys = [s.key for s in samples_page(log)] if run == ids["eval"] else [""]
            for key in keys:
                expected = log.messages(key or None)  # ([] for the sample that failed)
                assert last_messages(log, key) == expected
                seen += len(expected)
    assert seen > 10
    with sqlite3.connect(db) as conn:  # its first tool call's info row damaged
        conn.execute(
            "UPDATE events SET data = '{' WHERE run_id = ? AND seq = (SELECT MIN(seq) FROM "
            "events WHERE run_id = ? AND type = 'info')",
            (ids["run"], ids["run"]),
        )
    proc, url = start_viewer(db)
    try:
        path = url.rstrip("/") + f"/api/runs/{ids['run']}/conversation"
        r = httpx.get(path, timeout=30)
        assert r.status_code == 200, r.text
        assert [m["role"] for m in r.json()["messages"]][-2:] == ["assistant", "tool"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_damaged_rows_placeholder_is_where_the_row_is(tmp_path: Path) -> None:
    # its id and its place in the nesting are the row's: its link (#seq) opens it, a live
    # page's refresh finds it, and it is shown within its tool call
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    ids = make_store(db)
    close_idle_files()
    with sqlite3.connect(db) as conn:  # an info row within the first tool call, cut short
        [(bad, span)] = conn.execute(
            "SELECT id, span_id FROM events WHERE run_id = ? AND type = 'info' ORDER BY seq "
            "LIMIT 1",
            (ids["run"],),
        ).fetchall()
        conn.execute("UPDATE events SET data = '{' WHERE run_id = ? AND id = ?", (ids["run"], bad))
    assert span is not None
    proc, url = start_viewer(db)
    try:
        path = url.rstrip("/") + f"/api/runs/{ids['run']}/events"
        events = httpx.get(path, params={"limit": 500}, timeout=30).json()["events"]
        [damaged] = [e for e in events if e.get("source") == DAMAGED]
        assert damaged["id"] == bad and damaged["parents"] == [span] and damaged["depth"] == 1
        linked = httpx.get(path, params={"event": damaged["id"]}, timeout=30)
        assert linked.status_code == 200, linked.text
        refreshed = httpx.get(path, params={"refresh": damaged["id"]}, timeout=30).json()
        assert [e["id"] for e in refreshed["refreshed"]] == [bad]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_damaged_input_message_hides_no_event(tmp_path: Path) -> None:
    # the system prompt's row damaged: every model call's input holds it; the transcript,
    # a call's full input and the conversation show it in its place, the rest around it
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    run = make_store(db)["run"]
    close_idle_files()
    with sqlite3.connect(db) as conn:
        [(ids,)] = conn.execute("SELECT messages FROM runs WHERE id = ?", (run,)).fetchall()
        first = json.loads(ids)[0]
        conn.execute("UPDATE messages SET data = '{' WHERE run_id = ? AND id = ?", (run, first))
    proc, url = start_viewer(db)
    try:
        base = url.rstrip("/") + f"/api/runs/{run}"
        page = httpx.get(base + "/events", params={"limit": 500}, timeout=30)
        assert page.status_code == 200, page.text
        models = [e for e in page.json()["events"] if e["event"] == "model"]
        assert len(models) == 3 and models[0]["output"]["message"]["role"] == "assistant"
        [placeholder, prompt] = models[0]["input_messages"]
        assert placeholder["id"] == first and placeholder["role"] == "damaged"
        assert "cannot be read" in placeholder["content"] and prompt["content"] == "Find cats."
        later = httpx.get(base + f"/events/{models[-1]['id']}/input", timeout=30).json()
        assert [m["role"] for m in later["messages"]][:2] == ["damaged", "user"]
        conversation = httpx.get(base + "/conversation", timeout=30)
        assert conversation.status_code == 200, conversation.text
        assert conversation.json()["messages"][0]["role"] == "damaged"
        # the message itself, asked for whole: why it cannot be read
        whole = httpx.get(base + f"/messages/{first}/whole", timeout=30)
        assert whole.status_code == 500 and "cannot be read" in whole.json()["error"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_message_nested_past_what_can_be_sent_is_shown_as_such(tmp_path: Path) -> None:
    # a store from elsewhere: a call's arguments nested 400 deep read back, but are not
    # made JSON again (pydantic stops at 255 levels): in its place, why; never a 500
    # without a word
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path / "runs.db"
    run = make_store(db)["run"]
    close_idle_files()
    deep = '{"a":' * 400 + "1" + "}" * 400
    with sqlite3.connect(db) as conn:
        [(ids,)] = conn.execute("SELECT messages FROM runs WHERE id = ?", (run,)).fetchall()
        [(target, data)] = conn.execute(
            "SELECT id, data FROM messages WHERE run_id = ? AND id = ?",
            (run, json.loads(ids)[2]),  # the first call's answer
        ).fetchall()
        message = json.loads(data)
        assert message["role"] == "assistant" and message["tool_calls"]
        message["tool_calls"][0]["arguments"] = {"x": "PLACE"}
        text = json.dumps(message).replace('"PLACE"', deep)
        conn.execute(
            "UPDATE messages SET data = ? WHERE run_id = ? AND id = ?", (text, run, target)
        )
    proc, url = start_viewer(db)
    try:
        base = url.rstrip("/") + f"/api/runs/{run}"
        conversation = httpx.get(base + "/conversation", timeout=30)
        assert conversation.status_code == 200, conversation.text
        shown = conversation.json()["messages"][2]
        assert shown["id"] == target and shown["role"] == "damaged"
        assert "cannot be shown" in shown["content"]
        events = httpx.get(base + "/events", params={"limit": 500}, timeout=30)
        assert events.status_code == 200, events.text
        # the first model call (its output: that message) in its place, the others shown
        listed = events.json()["events"]
        [damaged] = [e for e in listed if e.get("source") == DAMAGED]
        assert "cannot be shown" in damaged["data"]["error"]
        assert [e["event"] for e in listed].count("model") == 2
        linked = httpx.get(base + "/events", params={"event": damaged["id"]}, timeout=30)
        assert linked.status_code == 200, linked.text
        whole = httpx.get(base + f"/messages/{target}/whole", timeout=30)
        assert whole.status_code == 500 and "cannot be shown" in whole.json()["error"]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def damaged_message(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run store whose run's first message (its system prompt) row is damaged (made
    before the browser's event loop runs: a run is made with run_sync)."""
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    db = tmp_path_factory.mktemp("damaged") / "runs.db"
    run = make_store(db)["run"]
    close_idle_files()
    with sqlite3.connect(db) as conn:
        [(ids,)] = conn.execute("SELECT messages FROM runs WHERE id = ?", (run,)).fetchall()
        first = json.loads(ids)[0]
        conn.execute(f"UPDATE messages SET data = '{SHORT_IMG}' WHERE run_id = ? AND id = ?",
                     (run, first))  # fmt: skip
    return db, run


def test_the_page_shows_a_damaged_message_in_its_place(
    damaged_message: tuple[Path, str], page: Any
) -> None:
    from playwright.sync_api import expect

    db, run = damaged_message
    proc, url = start_viewer(db)
    try:
        page.goto(url + f"#/run/{run}?tab=conversation")
        damaged = page.locator(".msg.damaged")
        expect(damaged).to_contain_text("cannot be read")
        expect(page.locator(".msg.user")).to_contain_text("Find cats.")
        page.goto(url + f"#/run/{run}?tab=transcript")
        model = page.locator("details.ev-model").first
        model.locator("summary").click()
        expect(model.locator(".msg.damaged")).to_contain_text("cannot be read")
    finally:
        proc.terminate()
        proc.wait(10)
