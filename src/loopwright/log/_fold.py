"""Folding a run store file's write-ahead log into it, beside the writing: the
connection that does it (:func:`folder`) and the fold itself (:func:`fold`), for the
file's writer thread (``_file_thread.py``, :meth:`_FileWriter._fold`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["fold", "folder"]

_log = logging.getLogger("loopwright.log")


def folder(path: Path) -> sqlite3.Connection | None:
    """The connection that folds the log of the file the writer opened at ``path``,
    opened at the first fold and kept while the writer's is open. SQLite finds a file's
    log by its name, so one opened by the path when another file is there pairs that
    file with this log: the writer checks the file at the path is its own before and
    after (else no folds; SQLite's own, in a commit, remain). Closed before the writer's
    connection, whose lock on the log's index keeps that close from folding anything.
    ``None`` when it cannot be opened (only logged: no folds)."""
    import sqlite3
    from urllib.parse import quote

    conn: sqlite3.Connection | None = None
    try:  # (mode=rw: a file removed meanwhile is not made again; a name that is not
        # UTF-8 quoted from its bytes)
        uri = f"file:{quote(os.fsencode(path.absolute()))}?mode=rw"
        conn = sqlite3.connect(
            uri, uri=True, timeout=1.0, isolation_level=None, check_same_thread=False
        )
        conn.execute("SELECT count(*) FROM meta").fetchone()  # the file and its log open
        return conn
    except Exception as ex:
        _log.debug("run store %s: cannot open a connection to fold the log: %r", path, ex)
        if conn is not None:
            conn.close()
        return None


def fold(conn: sqlite3.Connection, path: Path, mode: str = "PASSIVE", wait: bool = True) -> None:
    import sqlite3

    try:
        if not wait:  # (TRUNCATE waits for every reader to leave the log: it folds in
            conn.execute("PRAGMA busy_timeout = 0")  # all it can, and empties it if free)
        conn.execute(f"PRAGMA wal_checkpoint({mode})")
    except sqlite3.Error as ex:  # nothing is lost: the log keeps it (the writer says why)
        _log.debug("run store %s: folding the log failed: %r", path, ex)
