"""The page over a run of hostile content, in headless Chromium: what is too big for a
page is cut there and whole as a download; nothing can pass for the page's own parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._store import BIG_ANSWER, BIG_LINE
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
    answer = page.locator(".msg.assistant")
    sync_api.expect(answer.locator(".cut a")).to_have_text("the whole message (JSON)")
    assert len(answer.locator(".text").text_content() or "") < 20_000
    with page.expect_download() as download:
        answer.locator(".cut a").click()
    whole = json.loads(Path(download.value.path()).read_text())["content"]
    assert len(whole) > 500_000 and BIG_ANSWER.startswith(whole[:1000])


def test_markdown_shows_no_picture(huge: Viewer, page: Any) -> None:
    page.goto(huge.url + f"#/run/{huge.ids['run']}?tab=transcript")
    image = page.locator("details.ev-info").nth(1)
    image.locator("summary").click()
    sync_api.expect(image.locator(".md")).to_contain_text("![approve](data:image/png")
    assert page.locator("main img, main a[href^='data:']").count() == 0
