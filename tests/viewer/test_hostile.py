"""The viewer's server against hostile requests and hostile runs: another site's page,
numbers out of range, and content far bigger than a page."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from ._store import BIG_ANSWER, BIG_LINE
from .conftest import Viewer, start_viewer


def test_a_page_elsewhere_naming_itself_as_the_host_is_refused(viewer: Viewer) -> None:
    # DNS rebinding: evil.example's page, its name now pointing at 127.0.0.1, asks with
    # its own name as the Host: without a token it must not read the runs
    port = viewer.url.split(":")[2].rstrip("/")
    api = viewer.url.rstrip("/") + "/api/runs"
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
        r = httpx.get(api, headers={"Host": host}, timeout=30)
        assert r.status_code == 403 and viewer.ids["run"] not in r.text
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert httpx.get(api, headers={"Host": host}, timeout=30).status_code == 200


def test_with_a_token_any_host_name_may_be_used(viewer: Viewer) -> None:
    proc, url = start_viewer(viewer.db, "--token", "s3cret")
    try:
        api = url.split("?")[0] + "api/runs"
        named = {"Host": "viewer.lan", "Authorization": "Bearer s3cret"}
        assert httpx.get(api, headers=named, timeout=30).status_code == 200
        assert httpx.get(api, headers={"Host": "viewer.lan"}, timeout=30).status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    ("path", "param"),
    [("events", "after"), ("events", "before"), ("store", "upto"), ("samples", "offset")],
)
def test_a_number_out_of_range_is_a_bad_request(viewer: Viewer, path: str, param: str) -> None:
    url = f"{viewer.url.rstrip('/')}/api/runs/{viewer.ids['run']}/{path}"
    r = httpx.get(url, params={param: "9" * 30}, timeout=30)
    assert r.status_code == 400 and r.json() == {"error": f"{param} is out of range"}


def test_every_answer_is_for_this_origin_only(viewer: Viewer) -> None:
    r = httpx.get(viewer.url.rstrip("/") + "/api/runs", timeout=30)
    assert r.headers["cross-origin-resource-policy"] == "same-origin"
    assert "access-control-allow-origin" not in r.headers
    # no picture from anywhere but the viewer itself (a data: image could be a button)
    assert "img-src 'self';" in r.headers["content-security-policy"]


def test_huge_content_is_cut_to_a_page_and_whole_as_a_download(huge: Viewer) -> None:
    base, run = huge.url.rstrip("/") + "/api/runs", huge.ids["run"]
    page = httpx.get(f"{base}/{run}/events", params={"limit": 500}, timeout=30)
    assert page.status_code == 200 and len(page.content) < 200_000
    events = page.json()["events"]
    big = next(e for e in events if e.get("source") == "big")
    assert (
        big["cut"] is True and len(big["data"]) < 11_000 and "characters not shown" in big["data"]
    )
    assert big["html"].startswith("<h1>big</h1>") and len(big["html"]) < 20_000
    model = [e for e in events if e["event"] == "model"][-1]  # (its answer: 1 MB)
    assert model["cut"] is True and len(json.dumps(model)) < 100_000
    store = next(e for e in events if e["event"] == "store")
    assert store["cut"] is True and len(json.dumps(store)) < 100_000
    # the whole event: a download of its own, never shown in the page
    whole = httpx.get(f"{base}/{run}/events/{big['id']}/whole", timeout=30)
    assert whole.headers["content-disposition"] == 'attachment; filename="event.json"'
    assert whole.json()["data"] == BIG_LINE and "html" not in whole.json()
    # the run's row (its input), its store and its conversation are cut too
    for path in ("", "?x=1", "/store", "/conversation"):
        r = httpx.get(f"{base}/{run}{path}", timeout=30)
        assert r.status_code == 200 and len(r.content) < 100_000, path
    listed = httpx.get(base, timeout=30).json()["runs"][0]
    assert listed["cut"] is True and len(listed["input"]) < 11_000
    assert httpx.get(f"{base}/{run}/store", timeout=30).json()["cut"] is True
    [answer] = httpx.get(f"{base}/{run}/conversation", timeout=30).json()["messages"][-1:]
    assert answer["cut"] is True
    message = httpx.get(f"{base}/{run}/messages/{answer['id']}/whole", timeout=30)
    assert message.json()["content"] == BIG_ANSWER


def test_markdown_makes_no_image_and_no_data_link(huge: Viewer) -> None:
    url = f"{huge.url.rstrip('/')}/api/runs/{huge.ids['run']}/events"
    events = httpx.get(url, timeout=30).json()["events"]
    image = next(e for e in events if e.get("source") == "image")
    assert "<img" not in image["html"] and 'href="data:' not in image["html"]
    assert "![approve](data:image/png" in image["html"]  # its markdown, as text


def test_a_message_of_another_run_is_not_read(huge: Viewer, tmp_path: Path) -> None:
    url = f"{huge.url.rstrip('/')}/api/runs/{huge.ids['run']}/messages/nope/whole"
    r = httpx.get(url, timeout=30)
    assert r.status_code == 404 and "error" in r.json()
