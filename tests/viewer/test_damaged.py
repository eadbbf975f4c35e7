"""The viewer over a run store with a damaged row: the runs list shows it, with why, and
the other runs; opening it is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

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
        first_page = httpx.get(path, timeout=30)
        assert first_page.status_code == 500 and "cannot be read" in first_page.json()["error"]
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
