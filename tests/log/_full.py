"""A run store that fills up: SQLite's own SQLITE_FULL, from a page cap on the writer's
connection (a real disk-full error without filling a disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright.log import _file_thread


def cap_pages(monkeypatch: pytest.MonkeyPatch, spare: int = 2) -> None:
    """From now on, a writer's connection may grow its file by ``spare`` pages only."""
    real_connect = _file_thread.connect

    def capped(path: str | Path) -> object:
        conn = real_connect(path)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + spare}")
        return conn

    monkeypatch.setattr(_file_thread, "connect", capped)
