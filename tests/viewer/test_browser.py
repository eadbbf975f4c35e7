"""The viewer in a real browser: headless Chromium (the system's, no download) driven
by Playwright against `loopwright view` on 127.0.0.1."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ._store import IMG, SCRIPT, SHORT_IMG, damaged_store, live_command
from .conftest import CHROMIUM, Viewer, start_viewer

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package")


def test_runs_list_then_a_runs_conversation(viewer: Viewer, page: Any) -> None:
    page.goto(viewer.url)
    rows = page.locator("#runs tr.run")
    sync_api.expect(rows).to_have_count(2)
    assert rows.nth(0).get_attribute("data-id") == viewer.ids["eval"]
    sync_api.expect(rows.nth(1).locator(".status")).to_have_text("success")
    sync_api.expect(rows.nth(1).locator("td.stats")).to_have_text("3")
    sync_api.expect(rows.nth(1).locator("td.cost")).to_have_text("$0.0000")  # mock: free
    rows.nth(1).get_by_role("link", name="finder").click()
    sync_api.expect(page.locator(".tabs a.on")).to_have_text("conversation")
    messages = page.locator(".msg")
    sync_api.expect(messages.first).to_contain_text("You look things up.")
    # the model's HTML is text: the <img> it sent is shown, not made
    assert page.locator("main img, main svg, main script").count() == 0
    sync_api.expect(messages.nth(2)).to_contain_text("<img src=x onerror=")
    # tool calls are folded under the message that asked for them
    call = page.locator("details.call").first
    assert call.get_attribute("open") is None
    call.locator("summary").click()
    sync_api.expect(call.locator("pre.result")).to_contain_text(f"found: {SCRIPT}")
    sync_api.expect(call.locator("pre.json")).to_contain_text('"query": "cats <script>')


def test_transcript_tool_call_and_event_link(viewer: Viewer, page: Any) -> None:
    page.goto(viewer.url + f"#/run/{viewer.ids['run']}?tab=transcript")
    events = page.locator("#events details.ev")
    sync_api.expect(events.first).to_be_visible()
    tool = page.locator("details.ev-tool").first
    tool.locator("summary").click()
    sync_api.expect(tool.locator("pre.result")).to_contain_text("found: <script>")
    # nested events are indented under the call, and fold away with it
    info = page.locator("details.ev-info").first
    assert info.evaluate("e => parseFloat(e.style.marginLeft)") > 0
    tool.locator("button.fold").click()
    sync_api.expect(info).to_be_hidden()
    others = page.locator("details.ev-tool").nth(1)
    other_info = page.locator(f'details.ev-info[data-parents="{others.get_attribute("data-id")}"]')
    sync_api.expect(other_info.first).to_be_visible()  # another call's events stay
    tool.locator("button.fold").click()
    sync_api.expect(info).to_be_visible()
    info.locator("summary").click()
    md = info.locator(".md")
    sync_api.expect(md.locator("strong")).to_have_text("looked up")
    assert md.locator("a").count() == 0  # the javascript: link is not a link
    sync_api.expect(md).to_contain_text("<script>")
    # an event's link opens the run at that event
    store = page.locator("details.ev-store").last
    event_id = store.get_attribute("data-id")
    store.locator("a.link").click()
    page.wait_for_url(f"**event={event_id}")
    page.reload()
    target = page.locator("details.ev.target")
    sync_api.expect(target).to_have_attribute("data-id", event_id or "")
    sync_api.expect(target.locator("pre.json").first).to_contain_text("looked_up")
    target.get_by_role("button", name="show the store at this point").click()
    sync_api.expect(target).to_contain_text('"looked_up": "dogs"')


def test_an_eval_and_its_samples(viewer: Viewer, page: Any) -> None:
    page.goto(viewer.url + f"#/run/{viewer.ids['eval']}")
    sync_api.expect(page.locator(".metrics")).to_contain_text("accuracy: 0.500")
    rows = page.locator("#samples tr.sample-row")
    sync_api.expect(rows).to_have_count(3)
    page.locator("form.filters select").select_option("error")
    page.get_by_role("button", name="Filter").click()
    sync_api.expect(rows).to_have_count(1)
    sync_api.expect(rows.first).to_contain_text("provider down")
    page.locator("form.filters select").select_option("")
    page.locator("form.filters input[name=score]").fill("0")
    page.get_by_role("button", name="Filter").click()
    sync_api.expect(rows).to_have_count(1)
    sync_api.expect(rows.first).to_contain_text("s2")
    rows.first.get_by_role("link", name="s2").click()
    sync_api.expect(page.locator("table.sample")).to_contain_text("The answer is 5.")
    page.get_by_role("link", name="transcript").click()
    sync_api.expect(page.locator("details.ev-model").first).to_be_visible()


def test_a_live_run_gains_events_and_ends(viewer: Viewer, page: Any, tmp_path: Path) -> None:
    stops = [tmp_path / "stop-list", tmp_path / "stop-run"]
    procs = [
        subprocess.Popen(live_command(viewer.db, stop), stdout=subprocess.PIPE, text=True)
        for stop in stops
    ]
    try:
        listed, watched = (p.stdout.readline().strip() for p in procs if p.stdout)
        # the runs list follows a run that is going
        page.goto(viewer.url)
        row = page.locator(f'#runs tr.run[data-id="{listed}"] .status')
        sync_api.expect(row).to_have_text("running")
        stops[0].touch()
        procs[0].wait(30)
        sync_api.expect(row).to_have_text("success", timeout=20_000)
        # the transcript gains events as they are written, and sees the run end
        page.goto(viewer.url + f"#/run/{watched}?tab=transcript")
        sync_api.expect(page.locator("#live")).to_have_text("● live")
        sync_api.expect(page.locator(".runhead .status")).to_have_text("running")
        infos = page.locator("details.ev-info")
        sync_api.expect(infos.first).to_be_visible()
        seen = infos.count()
        sync_api.expect(infos).not_to_have_count(seen)  # more came without a reload
        sync_api.expect(page.locator("details.ev-info", has_text="tick 3")).to_have_count(1)
        stops[1].touch()
        procs[1].wait(30)
        sync_api.expect(page.locator(".runhead .status")).to_have_text("success")
        sync_api.expect(page.locator("#live")).to_have_text("")
    finally:
        for stop, proc in zip(stops, procs, strict=True):
            stop.touch()
            proc.wait(30)


def test_a_damaged_row_is_listed_with_why_as_text(page: Any, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    db = tmp_path / "runs.db"
    with ThreadPoolExecutor(1) as pool:  # (the browser's event loop runs in this thread)
        ids = pool.submit(damaged_store, db).result()
    proc, url = start_viewer(db)
    try:
        page.goto(url)
        rows = page.locator("#runs tr.run")
        sync_api.expect(rows).to_have_count(2)
        bad_id, good_id = ids["bad"], ids["good"]
        bad = page.locator(f'#runs tr.run[data-id="{bad_id}"]')
        sync_api.expect(bad.locator(".status")).to_have_text("damaged")
        sync_api.expect(bad.locator(".why")).to_have_text(
            f"its created: a time that is not a number: {SHORT_IMG!r}"
        )
        sync_api.expect(bad.get_by_role("link")).to_have_text(IMG)  # its name, as text
        good = page.locator(f'#runs tr.run[data-id="{good_id}"]')
        sync_api.expect(good.locator(".status")).to_have_text("success")
        assert page.locator("main img, main svg, main script").count() == 0
        # the damaged filter lists it alone; opening it says why
        page.select_option("select[name=status]", "damaged")
        page.get_by_role("button", name="Filter").click()
        sync_api.expect(rows).to_have_count(1)
        bad.get_by_role("link").click()
        sync_api.expect(page.locator("main p.error")).to_contain_text("its created")
    finally:
        proc.terminate()
        proc.wait(10)
