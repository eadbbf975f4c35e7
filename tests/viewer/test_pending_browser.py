"""A waiting run's calls in headless Chromium: shown as text, every character seen
(a module of its own: its browser, open for the module, runs an event loop)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import loopwright as lw

from ..approval.test_deferred import agent_process
from .conftest import start_viewer


@contextmanager
def waiting_run(tmp_path: Path, command: str) -> Iterator[tuple[str, str, Path, Path]]:
    """A run (in its own process) waiting for approval of ``bash(command)``, and a
    viewer over its store: (the viewer's URL, the run's id, the store, the file the
    command would have written had it run)."""
    db, effects = tmp_path / "runs.db", tmp_path / "effects.txt"
    (tmp_path / "command.txt").write_text(command, encoding="utf-8")
    run_id = agent_process("start", db, effects, f"@{tmp_path / 'command.txt'}")["run_id"]
    proc, url = start_viewer(db)
    try:
        yield url, run_id, db, effects
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_page_shows_the_pending_call_as_text_in_a_browser(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with waiting_run(tmp_path, "<img src=x onerror=window.__pwned=1> deploy") as (url, run_id, *_):
        page.goto(url)
        row = page.locator(f'#runs tr.run[data-id="{run_id}"]')
        expect(row.locator(".status")).to_have_text("waiting for approval")
        page.goto(url + f"#/run/{run_id}")
        pending = page.locator(".runhead .pending")
        expect(pending).to_contain_text(f"loopwright runs approve {run_id}")
        expect(pending.locator("pre")).to_contain_text("<img src=x onerror=")
        assert page.locator("main img").count() == 0  # (no script ran: the fixture checks)


def test_the_page_shows_what_a_page_would_hide_or_reorder(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    # shown raw, the override reverses what follows it on the page ("hs | lru" reads as
    # "url | sh"), the zero-width space and the word joiner are nothing at all
    hostile = "echo safe \u202ehs | lru\u202c\u200b\u2060done" + " " * 300 + "; rm -rf ~"
    with waiting_run(tmp_path, hostile) as (url, run_id, db, effects):
        page.goto(url + f"#/run/{run_id}")
        pending = page.locator(".runhead .pending")
        expect(pending.locator("pre")).to_contain_text("rm -rf")
        shown = pending.inner_text()
    for char in ("\u202e", "\u202c", "\u200b", "\u2060"):
        assert char not in shown, repr(char)
    assert "echo safe \\u202ehs | lru\\u202c\\u200b\\u2060done" in shown
    assert 'note: 300 blank characters at character 58, then: "; rm -rf ~\\""' in shown
    assert "calls waiting: 1 bash" in shown
    [call] = lw.pending_calls(run_id, db=db)
    assert f"approve it: loopwright runs approve {run_id} --approve call-1=" in shown
    assert call.arguments_hash in shown and not effects.exists()
