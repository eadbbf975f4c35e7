"""The page over a run of hostile content, in headless Chromium: what is too big for a
page is cut there and whole as a download; nothing can pass for the page's own parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._store import BIG_ANSWER, BIG_LINE, RLO_NAME, RLO_TOOL
from .conftest import Viewer

sync_api = pytest.importorskip("playwright.sync_api")


def test_a_cut_event_and_message_are_whole_as_downloads(huge: Viewer, page: Any) -> None:
    run = huge.ids["run"]
    page.goto(huge.url + f"#/run/{run}?tab=transcript")
    big = page.locator("details.ev-info").first
    big.locator("summary").click()
    sync_api.expect(big.locator(".md h1")).to_have_text("big")
    link = big.locator(".cut a")
    sync_api.expect(link).to_have_text("the whole event (JSON)")
    with page.expect_download() as download:
        link.click()
    assert json.loads(Path(download.value.path()).read_text())["data"] == BIG_LINE
    # the conversation: the 1 MB answer is cut, whole as a download
    page.goto(huge.url + f"#/run/{run}?tab=conversation")
    answer = page.locator(".msg.assistant").last
    sync_api.expect(answer.locator(".cut a")).to_have_text("the whole message (JSON)")
    assert len(answer.locator(".text").text_content() or "") < 20_000
    with page.expect_download() as download:
        answer.locator(".cut a").click()
    whole = json.loads(Path(download.value.path()).read_text())["content"]
    assert whole == BIG_ANSWER


def test_markdown_shows_no_picture(huge: Viewer, page: Any) -> None:
    page.goto(huge.url + f"#/run/{huge.ids['run']}?tab=transcript")
    image = page.locator("details.ev-info").nth(1)
    image.locator("summary").click()
    sync_api.expect(image.locator(".md")).to_contain_text("![approve](data:image/png")
    assert page.locator("main img, main a[href^='data:']").count() == 0


def test_a_bidi_override_reorders_nothing_after_it(huge: Viewer, page: Any) -> None:
    # RIGHT-TO-LEFT OVERRIDE in a model's tool name would show the rest of its line
    # (" · error") reversed: the name is isolated in a <bdi> of its own
    page.goto(huge.url + f"#/run/{huge.ids['run']}?tab=transcript")
    sync_api.expect(page.locator(".runhead h2 > bdi")).to_have_text(RLO_NAME)
    sync_api.expect(page.locator("#where bdi").first).to_have_text(RLO_NAME)
    tool = page.locator("details.ev-tool", has_text="fetch").locator("summary")
    sync_api.expect(tool.locator("bdi")).to_have_text(RLO_TOOL)
    sync_api.expect(tool).to_contain_text(" · error")
    page.goto(huge.url + f"#/run/{huge.ids['run']}?tab=conversation")
    call = page.locator("details.call", has_text="fetch").locator("summary")
    sync_api.expect(call.locator("bdi")).to_have_text(RLO_TOOL)


def test_the_approve_command_shown_is_one_shell_word(page: Any, tmp_path: Path) -> None:
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    import loopwright as lw
    from loopwright.log._approvals import record_pending
    from loopwright.log._file_thread import close_idle_files
    from loopwright.tools import PendingCall, arguments_hash

    from .conftest import start_viewer

    db, hostile = tmp_path / "runs.db", "x; touch pwned 'q'"

    def store() -> None:  # a run store from elsewhere: a waiting run with a hostile id
        state = lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=db)
        close_idle_files()
        with sqlite3.connect(db) as conn:
            conn.execute(
                "UPDATE runs SET id = ?, status = 'waiting' WHERE id = ?", (hostile, state.run_id)
            )
            for table in ("events", "messages", "tool_sets"):
                conn.execute(f"UPDATE {table} SET run_id = ?", (hostile,))
        call = lw.ToolCall(id="c1", function="bash", arguments={"cmd": "ls"})
        pending = PendingCall(call=call, arguments_hash=arguments_hash(call), approver="defer")
        record_pending(db, hostile, [pending])

    with ThreadPoolExecutor(1) as pool:  # (the browser's event loop runs in this thread)
        pool.submit(store).result()
    proc, url = start_viewer(db)
    try:
        page.goto(url)
        page.locator("#runs tr.run a").first.click()
        sync_api.expect(page.locator(".runhead .pending b")).to_have_text(
            "waiting for approval: loopwright runs approve 'x; touch pwned '\\''q'\\'''"
        )
        sync_api.expect(page.locator(".msg.user")).to_contain_text("hi")  # (the run reads)
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_token_gone_says_so(huge: Viewer, page: Any) -> None:
    from .conftest import start_viewer

    proc, url = start_viewer(huge.db, "--token", "s3cret")
    try:
        page.goto(url)
        sync_api.expect(page.locator("#runs tr.run")).to_have_count(1)
        page.context.clear_cookies()  # (the viewer restarted with another token, say)
        page.locator("#runs tr.run a").first.click()
        sync_api.expect(page.locator("main p.error")).to_have_text(
            "error: a token is needed: open the URL printed"
        )
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_status_the_page_does_not_know_is_styled_as_none(page: Any, tmp_path: Path) -> None:
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    import loopwright as lw
    from loopwright.log._file_thread import close_idle_files

    from .conftest import start_viewer

    db = tmp_path / "runs.db"

    def store() -> str:  # a store from elsewhere: a failed run's status, made to look fine
        state = lw.run_sync(lw.react(submit=False), "hi", model=lw.get_model("mock"), db=db)
        close_idle_files()
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE runs SET status = 'error status-success'")
        return str(state.run_id)

    with ThreadPoolExecutor(1) as pool:  # (the browser's event loop runs in this thread)
        run_id = pool.submit(store).result()
    proc, url = start_viewer(db)
    try:
        page.goto(url)
        shown = page.locator(f'#runs tr.run[data-id="{run_id}"] .status')
        sync_api.expect(shown).to_have_text("error status-success")
        assert shown.get_attribute("class") == "status status-other"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_long_model_input_comes_a_page_at_a_time(page: Any, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from ._store import long_input_store
    from .conftest import start_viewer

    db = tmp_path / "runs.db"
    with ThreadPoolExecutor(1) as pool:  # (the browser's event loop runs in this thread)
        run = pool.submit(long_input_store, db).result()
    proc, url = start_viewer(db)
    try:
        page.goto(url + f"#/run/{run}?tab=transcript")
        call = page.locator("details.ev-model").nth(1)
        call.locator("summary").click()
        more = call.locator(".body > button")
        sync_api.expect(more).to_have_text("show the 450 earlier input messages")
        more.click()
        shown = call.locator(".body > div > div.msg")
        sync_api.expect(shown).to_have_count(200)
        sync_api.expect(more).to_have_text("show more of the input (200 of 452 shown)")
        more.click()
        more.click()
        sync_api.expect(shown).to_have_count(452)
        sync_api.expect(shown.last).to_contain_text("last")
        sync_api.expect(more).to_have_count(0)
    finally:
        proc.terminate()
        proc.wait(10)
