"""The viewer over a run store with a damaged row: the runs list shows it, with why, and
the other runs; opening it is one clear error."""

from __future__ import annotations

from pathlib import Path

import httpx

from ._store import IMG, SHORT_IMG, damaged_store
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
