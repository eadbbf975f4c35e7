"""The viewer's server over HTTP: a real `loopwright view` process on 127.0.0.1 over a
run store made by real runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ._store import SCRIPT
from .conftest import Viewer, start_viewer


def get(viewer: Viewer, path: str, **params: object) -> httpx.Response:
    return httpx.get(viewer.url.rstrip("/") + path, params=params, timeout=30)  # type: ignore[arg-type]


def test_the_runs_list_is_newest_first_and_filters(viewer: Viewer) -> None:
    runs = get(viewer, "/api/runs").json()["runs"]
    assert [r["id"] for r in runs] == [viewer.ids["eval"], viewer.ids["run"]]
    assert runs[0]["samples"] == 3 and runs[0]["metrics"]["match"]["accuracy"] == 0.5
    assert [r["name"] for r in get(viewer, "/api/runs", q="find").json()["runs"]] == ["finder"]
    assert get(viewer, "/api/runs", status="error").json()["runs"] == []
    assert len(get(viewer, "/api/runs", model="mock").json()["runs"]) == 2
    page = get(viewer, "/api/runs", limit=1).json()
    assert len(page["runs"]) == 1 and page["more"] is True
    page = get(viewer, "/api/runs", limit=1, offset=1).json()
    assert page["runs"][0]["id"] == viewer.ids["run"] and page["more"] is False
    # a LIKE wildcard in the search is a plain character
    assert get(viewer, "/api/runs", q="%").json()["runs"] == []


def test_events_come_a_page_at_a_time(viewer: Viewer) -> None:
    path = f"/api/runs/{viewer.ids['run']}/events"
    every = get(viewer, path, limit=500).json()
    seqs = [e["seq"] for e in every["events"]]
    assert seqs == sorted(seqs) and (every["first_seq"], every["last_seq"]) == (seqs[0], seqs[-1])
    kinds = [e["event"] for e in every["events"]]
    assert kinds.count("model") == 3 and kinds.count("tool") == 3
    first = get(viewer, path, limit=4).json()["events"]
    assert [e["seq"] for e in first] == seqs[:4]
    after = get(viewer, path, limit=4, after=first[-1]["seq"]).json()["events"]
    assert [e["seq"] for e in after] == seqs[4:8]
    last = get(viewer, path, limit=3, before=-1).json()["events"]
    assert [e["seq"] for e in last] == seqs[-3:]
    before = get(viewer, path, limit=3, before=seqs[5]).json()["events"]
    assert [e["seq"] for e in before] == seqs[2:5]
    # nested events know their depth: the info and store events inside a tool call
    tool = next(e for e in every["events"] if e["event"] == "tool")
    inner = [e for e in every["events"] if e.get("span_id") == tool["id"]]
    assert inner and {e["depth"] for e in inner} == {tool["depth"] + 1}
    assert {tuple(e["parents"]) for e in inner} == {(*tool["parents"], tool["id"])}
    # an event's link opens the page holding it
    target = every["events"][-2]
    around = get(viewer, path, event=target["id"], limit=5).json()["events"]
    assert target["id"] in [e["id"] for e in around]
    assert get(viewer, path, event="nope").status_code == 404
    assert get(viewer, path, after="x").status_code == 400


def test_model_events_carry_their_input_and_tool_events_their_result(viewer: Viewer) -> None:
    run = viewer.ids["run"]
    events = get(viewer, f"/api/runs/{run}/events", limit=500).json()["events"]
    model = [e for e in events if e["event"] == "model"]
    assert [m["role"] for m in model[0]["input_messages"]] == ["system", "user"]
    full = get(viewer, f"/api/runs/{run}/events/{model[-1]['id']}/input").json()["messages"]
    assert len(full) > len(model[-1]["input_messages"]) and full[1]["content"] == "Find cats."
    tool = next(e for e in events if e["event"] == "tool")
    assert tool["result"]["content"].startswith("found: " + SCRIPT)
    conv = get(viewer, f"/api/runs/{run}/conversation").json()
    assert conv["total"] == len(conv["messages"]) and conv["messages"][1]["content"] == "Find cats."
    assert get(viewer, f"/api/runs/{run}/store").json()["store"] == {"looked_up": "dogs"}
    store_events = [e for e in events if e["event"] == "store"]
    at = get(viewer, f"/api/runs/{run}/store", upto=store_events[0]["seq"]).json()["store"]
    assert at == {"looked_up": f"cats {SCRIPT}"}
    tokens = sum(m["usage"]["total_tokens"] for m in model)
    assert get(viewer, f"/api/runs/{run}/stats").json() == {"model_calls": 3, "tokens": tokens}


def test_odd_values_are_json_the_page_can_read(viewer: Viewer) -> None:
    r = get(viewer, f"/api/runs/{viewer.ids['run']}/events", limit=500)
    assert r.status_code == 200 and r.content.isascii()
    odd = [e["data"] for e in r.json()["events"] if e.get("source") == "odd"]
    assert odd and odd[0] == {"ratio": None, "name": "bad \udcff name"}


def test_markdown_is_sanitised(viewer: Viewer) -> None:
    events = get(viewer, f"/api/runs/{viewer.ids['run']}/events", limit=500).json()["events"]
    info = next(e for e in events if e["event"] == "info")
    assert "<strong>looked up</strong>" in info["html"]
    assert "<script" not in info["html"] and "&lt;script&gt;" in info["html"]
    assert 'href="javascript' not in info["html"]


def test_an_evals_samples_filter_by_status_and_score(viewer: Viewer) -> None:
    path = f"/api/runs/{viewer.ids['eval']}/samples"
    assert [s["id"] for s in get(viewer, path).json()["samples"]] == ["s1", "s2", "s3"]
    assert [s["id"] for s in get(viewer, path, status="error").json()["samples"]] == ["s3"]
    assert [s["id"] for s in get(viewer, path, score=0).json()["samples"]] == ["s2"]
    assert [s["id"] for s in get(viewer, path, score=1).json()["samples"]] == ["s1"]
    assert get(viewer, path, score="x").status_code == 400
    # an eval's model calls are its samples' (the failed one too)
    stats = get(viewer, f"/api/runs/{viewer.ids['eval']}/stats").json()
    assert stats["model_calls"] == 3 and stats["tokens"] > 0
    key = get(viewer, path).json()["samples"][0]["key"]
    run = get(viewer, f"/api/runs/{viewer.ids['eval']}", sample=key).json()
    assert run["sample"]["target"] == "2" and run["first_seq"] is not None
    events = get(viewer, f"/api/runs/{viewer.ids['eval']}/events", sample=key).json()["events"]
    assert events and {e["sample"] for e in events} == {key}


@pytest.mark.parametrize(
    "run_id",
    ["..%2F..%2Fetc%2Fpasswd", "run.json", "%2Fetc%2Fpasswd", "nope", "28c7"],
)
def test_no_request_reads_another_file_or_run(viewer: Viewer, run_id: str) -> None:
    r = httpx.get(f"{viewer.url.rstrip('/')}/api/runs/{run_id}", timeout=30)
    assert r.status_code == 404
    assert "root:" not in r.text


def test_static_files_stay_in_the_package(viewer: Viewer) -> None:
    assert get(viewer, "/static/app.js").status_code == 200
    for path in ("/static/..%2F_app.py", "/static/../_app.py", "/static/%2e%2e/__init__.py"):
        r = httpx.get(viewer.url.rstrip("/") + path, timeout=30)
        assert r.status_code == 404 and "import" not in r.text


def test_the_page_forbids_inline_and_foreign_scripts(viewer: Viewer) -> None:
    r = get(viewer, "/")
    assert r.status_code == 200 and '<script src="/static/app.js"' in r.text
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    # every asset is in the package: nothing is fetched from elsewhere
    for name in ("index.html", "app.js", "pending.js", "app.css"):
        text = (Path(__file__).parents[2] / "src/loopwright/viewer/static" / name).read_text()
        assert "http://" not in text and "https://" not in text


def test_a_token_guards_every_request(viewer: Viewer) -> None:
    proc, url = start_viewer(viewer.db, "--token", "s3cret")
    try:
        assert url.endswith("/?token=s3cret")
        base = url.split("?")[0]
        assert httpx.get(base + "api/runs", timeout=30).status_code == 401
        assert httpx.get(base, params={"token": "wrong"}, timeout=30).status_code == 401
        ok = httpx.get(url, timeout=30)
        assert ok.status_code == 200 and ok.cookies.get("lw_token") == "s3cret"
        cookie = httpx.get(base + "api/runs", cookies={"lw_token": "s3cret"}, timeout=30)
        assert cookie.status_code == 200 and len(cookie.json()["runs"]) == 2
        bearer = httpx.get(
            base + "api/runs", headers={"Authorization": "Bearer s3cret"}, timeout=30
        )
        assert bearer.status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)


def run_view(*args: str) -> subprocess.CompletedProcess[str]:
    env_src = str(Path(__file__).parents[2] / "src")
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "view", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": env_src, "PATH": "/usr/bin:/bin"},
    )


def test_another_address_needs_a_token(viewer: Viewer) -> None:
    r = run_view("--db", str(viewer.db), "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2 and "needs --token" in r.stderr


def test_a_file_that_is_not_a_run_store_is_refused(tmp_path: Path) -> None:
    r = run_view("--db", str(tmp_path / "missing.db"), "--port", "0")
    assert r.returncode == 1 and "no run store at" in r.stderr
    assert not (tmp_path / "missing.db").exists()


def test_a_runs_totals_follow_it_when_it_goes_on(tmp_path: Path) -> None:
    import sqlite3

    from loopwright.log._file_thread import close_idle_files

    from ._store import make_store

    db = tmp_path / "runs.db"
    run = make_store(db)["run"]
    close_idle_files()
    proc, url = start_viewer(db)
    try:
        stats = url.rstrip("/") + f"/api/runs/{run}/stats"
        assert httpx.get(stats, timeout=30).json()["model_calls"] == 3  # (kept: it ended)
        # the run is resumed and ends again (lw.resume): one more model call, a new end
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data) "
                "SELECT run_id, seq + 1000, id || 'x', sample, span_id, type, timestamp, data "
                "FROM events WHERE run_id = ? AND type = 'model' ORDER BY seq LIMIT 1",
                (run,),
            )
            conn.execute(
                "UPDATE runs SET finished = finished + 1, metadata = json_set(COALESCE("
                "metadata, '{}'), '$.resumes', 1) WHERE id = ?",
                (run,),
            )
        assert httpx.get(stats, timeout=30).json()["model_calls"] == 4
        nope = httpx.get(stats, params={"sample": "nope"}, timeout=30)
        assert nope.status_code == 404 and "no sample" in nope.json()["error"]
    finally:
        proc.terminate()
        proc.wait(10)
