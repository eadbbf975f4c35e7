"""The tool-spec cache in the run store: specs a model wrote (``@lw.tool(autogenerate=...)``),
by the key the run scope gives them (the function's version and the prompt's digest).

A small table of its own, ``tool_specs``, created on first use; a spec once written is
kept (the first writer wins when two processes write the same key)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from contextlib import AbstractContextManager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .._contexts import var_set
from ._db import connect
from ._fork import file_locked

__all__ = ["cached_spec", "current_spec_store", "save_spec", "spec_store"]

_store: ContextVar[Path | None] = ContextVar("loopwright_spec_store", default=None)


def spec_store(path: Path | None) -> AbstractContextManager[None]:
    """Within this, specs written go to the run store at ``path`` (``lw.run`` names its
    own: an agent used as a tool keeps its specs in the run it is part of)."""
    return var_set(_store, path, None)


def current_spec_store() -> Path | None:
    """The run store that keeps specs written now (``None``: none, memory only)."""
    return _store.get()


_TABLE = (
    "CREATE TABLE IF NOT EXISTS tool_specs (key TEXT PRIMARY KEY, name TEXT NOT NULL, "
    "spec TEXT NOT NULL, created REAL NOT NULL)"
)


def cached_spec(db: str | os.PathLike[str], key: str) -> dict[str, Any] | None:
    """The spec stored under ``key``, or ``None``."""
    with file_locked(), contextlib.closing(connect(db)) as conn:  # (see _fork.py)
        conn.execute(_TABLE)
        row = conn.execute("SELECT spec FROM tool_specs WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    found = json.loads(row[0])
    return found if isinstance(found, dict) else None


def save_spec(db: str | os.PathLike[str], key: str, name: str, spec: dict[str, Any]) -> None:
    """Keep ``spec`` under ``key`` (unless a spec is already kept there)."""
    with file_locked(), contextlib.closing(connect(db)) as conn:  # (see _fork.py)
        conn.execute(_TABLE)
        conn.execute(
            "INSERT OR IGNORE INTO tool_specs (key, name, spec, created) VALUES (?, ?, ?, ?)",
            (key, name, json.dumps(spec, sort_keys=True), time.time()),
        )
