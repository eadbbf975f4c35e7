from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._store import hostile_store, make_store

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Viewer:
    def __init__(self, url: str, db: Path, ids: dict[str, str]) -> None:
        self.url, self.db, self.ids = url, db, ids


def start_viewer(db: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``loopwright view`` in a process of its own, on any free port; its URL."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "view", "--db", str(db), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("loopwright view: "):
        proc.kill()
        raise AssertionError(
            f"no URL printed: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, line.split()[2]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    db = tmp_path_factory.mktemp("viewer") / "runs.db"
    ids = make_store(db)
    proc, url = start_viewer(db)
    try:
        yield Viewer(url, db, ids)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """A viewer over a run of huge content (``hostile_store``)."""
    db = tmp_path_factory.mktemp("huge") / "runs.db"
    run_id = hostile_store(db)
    proc, url = start_viewer(db)
    try:
        yield Viewer(url, db, {"run": run_id})
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium: the system's (Debian's package), driven by Playwright."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium package")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda ex: errors.append(str(ex)))
    yield pg
    # nothing a run holds ever ran as a script, and the page itself raised nothing
    assert pg.evaluate("window.__pwned") is None
    assert errors == []
    context.close()
