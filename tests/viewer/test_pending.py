"""The viewer shows a run waiting for approval and the calls it waits for, bounded."""

from __future__ import annotations

from pathlib import Path

import httpx

from ..approval.test_deferred import agent_process
from .conftest import start_viewer


def test_a_waiting_run_shows_its_pending_calls_bounded(tmp_path: Path) -> None:
    db, effects = tmp_path / "runs.db", tmp_path / "effects.txt"
    command = tmp_path / "command.txt"
    command.write_text("<script>alert(1)</script>\x1b[8m" + "B" * 50_000, encoding="utf-8")
    run_id = agent_process("start", db, effects, f"@{command}")["run_id"]
    proc, url = start_viewer(db)
    try:
        runs = httpx.get(url.rstrip("/") + "/api/runs", params={"status": "waiting"}).json()
        assert [r["id"] for r in runs["runs"]] == [run_id]
        run = httpx.get(url.rstrip("/") + f"/api/runs/{run_id}", timeout=30).json()
    finally:
        proc.terminate()
        proc.wait(10)
    assert run["status"] == "waiting"
    [pending] = run["pending"]
    assert pending["id"] == "call-1" and pending["tool"] == "bash"
    assert pending["approver"] == "defer" and len(pending["hash"]) == 64
    text = pending["arguments"]
    assert len(text) < 5_000 and "characters not shown" in text
    assert text.startswith('{\n  "cmd": "<script>alert(1)</script>')  # data: the page
    # builds text nodes from it, never HTML
    assert not effects.exists()
