"""The rows of a run store file, read straight from SQLite (for the writer's tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def event_rows(db: Path) -> list[tuple[int, str, str]]:
    """Every event row of ``db``: (seq, id, data), in order."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT seq, id, data FROM events ORDER BY seq").fetchall()
    finally:
        conn.close()
