"""The run store's SQLite file: where it is, how to open it, its tables."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import LoopwrightError
from ._fork import file_locked

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "RunStoreError",
    "connect",
    "connect_readonly",
    "default_db_path",
    "reading",
    "resolve_db",
    "unreadable",
]

DB_ENV = "LOOPWRIGHT_DB"
"""Environment variable naming the run store file (default ``./loopwright-runs.db``)."""
DEFAULT_DB = "loopwright-runs.db"

SCHEMA_VERSION = 2
"""The run store's schema. 2: a model event's row may refer to its tools
(``"tools": {"$ref": id}``, the list in the ``tool_sets`` table) instead of holding
them; a writer opening a version 1 file makes it 2 (its old rows read as they are), so
that a loopwright reading only version 1 says to upgrade instead of failing on a row."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT,
    model TEXT,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    input TEXT,
    output TEXT,
    messages TEXT,
    error TEXT,
    "limit" TEXT,
    store_id TEXT,
    metadata TEXT,
    host TEXT,
    pid INTEGER
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    input TEXT,
    target TEXT,
    output TEXT,
    messages TEXT,
    scores TEXT,
    error TEXT,
    "limit" TEXT,
    store_id TEXT,
    metadata TEXT,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    sample TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    sample TEXT NOT NULL,
    span_id TEXT,
    type TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS events_id ON events (run_id, id);
CREATE INDEX IF NOT EXISTS events_sample ON events (run_id, sample, seq);
CREATE TABLE IF NOT EXISTS tool_sets (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
"""


_TABLES = frozenset({"meta", "runs", "samples", "messages", "events", "tool_sets", "approvals"})
"""The run store's tables (``approvals``: made by the first deferred call's write)."""


class RunStoreError(LoopwrightError):
    """The run store could not be written or read: the file is missing, damaged, not a
    run store, or the disk is full. The message is one line and names the file.

    A run whose store fails while it runs is stopped at once (its task is cancelled, as
    a time limit does) and this error is raised where the run was entered; what was
    recorded before the failure stays readable.

    Attributes:
        state: When raised by ``run()``: the agent's state when the run was stopped (an
            ``AgentState``, with the conversation so far); else ``None``. (Typed ``Any``:
            the run store sits below the agents and does not know their types; ``run()``
            sets it, as the scope that owns the run.)
    """

    state: Any = None


def hostname() -> str:
    """This machine's name, as runs record it (to tell a dead local run from a live one)."""
    import socket

    return socket.gethostname()


def default_db_path() -> Path:
    """``$LOOPWRIGHT_DB``, else ``./loopwright-runs.db``."""
    return Path(os.environ.get(DB_ENV) or DEFAULT_DB)


def resolve_db(db: str | os.PathLike[str] | None) -> Path:
    """The run store file for a ``db=`` argument (``None``: the default)."""
    return Path(db) if db is not None else default_db_path()


def _check_is_run_store(conn: sqlite3.Connection, path: Path, *, create: bool) -> None:
    """Refuse a SQLite file that is not a run store before anything is written to it
    (tables, WAL mode): ``loopwright runs list --db app.db`` must not change ``app.db``."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    views = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='view'")}
    if views & _TABLES:  # (a view's query may never end: a recursive one, to hang a reader)
        conn.close()
        raise RunStoreError(
            f"{str(path)!r} is not a loopwright run store: its {min(views & _TABLES)!r} is a "
            "view, not a table"
        )
    if not tables:
        if create:
            return  # a new (or empty) file: it becomes a run store
        conn.close()
        raise RunStoreError(f"{str(path)!r} is an empty file, not a loopwright run store")
    version = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = row[0] if row else None
    if version is None:
        conn.close()
        raise RunStoreError(
            f"{str(path)!r} is a SQLite file but not a loopwright run store (it has tables "
            f"{', '.join(sorted(tables)[:5])}); choose a run store's file"
        )
    if not str(version).isdigit() or int(version) > SCHEMA_VERSION:
        conn.close()
        raise RunStoreError(
            f"the run store {str(path)!r} has schema version {version}; this loopwright "
            f"reads up to {SCHEMA_VERSION}: upgrade loopwright"
        )


def unreadable(path: str | os.PathLike[str], ex: Exception) -> RunStoreError:
    """The one-line error for a run store SQLite cannot read (damaged, truncated, not a
    SQLite file, or a failing disk)."""
    reason = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
    return RunStoreError(
        f"cannot read the run store {str(path)!r}: {reason} (is it a loopwright run store, "
        "and undamaged?)"
    )


@contextlib.contextmanager
def reading(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn SQLite's errors while reading the store at ``path``, and rows that do not
    parse (or nest too deep to), into a :class:`RunStoreError` naming the file (a
    truncated file, for one, reads until the missing page)."""
    import sqlite3

    try:
        yield
    # (pydantic's ValidationError is a ValueError; JSON nested too deep, a RecursionError)
    except (sqlite3.DatabaseError, ValueError, RecursionError) as ex:
        raise unreadable(path, ex) from ex


def connect(path: str | os.PathLike[str], *, create: bool = True) -> sqlite3.Connection:
    """Open the run store at ``path``: for writing (WAL mode), creating its tables if
    needed, or with ``create=False`` for reading only (see :func:`connect_readonly`).

    Raises:
        RunStoreError: The file does not exist (with ``create=False``), or is not a
            loopwright run store, or cannot be opened.
    """
    import sqlite3

    p = Path(path)
    if not create and str(p) != ":memory:":
        return connect_readonly(p)
    try:
        if str(p) != ":memory:":
            p.parent.mkdir(parents=True, exist_ok=True)
        with file_locked():  # (the tables made, WAL mode set: a fork waits, see _fork.py)
            conn = _connect_writing(p, create)
    except sqlite3.DatabaseError as ex:
        reason = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
        raise RunStoreError(
            f"cannot open the run store {str(p)!r} for writing: {reason} (is it a loopwright "
            "run store, and is its folder writable?)"
        ) from ex
    except OSError as ex:
        raise RunStoreError(f"cannot create the run store {str(p)!r}: {ex}") from ex
    return conn


def _connect_writing(p: Path, create: bool) -> sqlite3.Connection:
    import sqlite3

    conn = sqlite3.connect(
        str(p),
        timeout=30.0,
        isolation_level=None,
        check_same_thread=False,
        factory=_connection_type(),
    )
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        _check_is_run_store(conn, p, create=create)
        if str(p) != ":memory:":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise RunStoreError(f"could not put {str(p)!r} in WAL mode (got {mode})")
        # WAL + NORMAL: a committed transaction survives the process being killed
        conn.execute("PRAGMA synchronous = NORMAL")
        # the tables and the version in one transaction: another process opening the file
        # meanwhile sees both or neither; an older version is raised to this one (what
        # this writer writes, an older loopwright cannot read)
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{_SCHEMA}\nINSERT OR IGNORE INTO meta (key, value) "
            f"VALUES ('schema_version', '{SCHEMA_VERSION}');\nUPDATE meta SET value = "
            f"'{SCHEMA_VERSION}' WHERE key = 'schema_version' AND "
            f"CAST(value AS INTEGER) < {SCHEMA_VERSION};\nCOMMIT;"
        )
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open the run store at ``path`` for reading: nothing is written, so a store on a
    read-only disk or folder can be read.

    A file this user may write is opened ``mode=rw`` with ``PRAGMA query_only``.
    Otherwise SQLite reads a WAL-mode file read-only (``mode=ro``) when its ``-shm`` index exists or
    can be made. In a read-only folder (a read-only disk, or one this user may not write)
    whose last writer closed cleanly there is neither
    ``-shm`` nor ``-wal`` (closing folds the log into the file), and nothing can be
    writing there: the file is then opened ``immutable=1`` (no locks, no log). (A ``-wal``
    left there without its ``-shm`` is then not read: copy the files to a writable folder
    to see the runs it holds.)

    Raises:
        RunStoreError: The file does not exist, is not a run store, or cannot be read.
    """
    import sqlite3
    from urllib.parse import quote

    if not path.exists():
        raise RunStoreError(
            f"no run store at {str(path)!r}; runs are recorded to $LOOPWRIGHT_DB or "
            f"./{DEFAULT_DB} by default"
        )
    uri = "file:" + quote(str(path.absolute()))
    try:
        if os.access(path, os.W_OK) and os.access(path.absolute().parent, os.W_OK):
            # a writable file is opened read-write but query-only: nothing is written, and
            # the last connection to close still folds away the -wal and -shm files (a
            # mode=ro connection leaves them behind after every `runs list`)
            conn = _open(uri + "?mode=rw", path)
            conn.execute("PRAGMA query_only = ON")
            return conn
        try:
            return _open(uri + "?mode=ro", path)
        except sqlite3.OperationalError as ex:
            # CANTOPEN (a read-only disk) or READONLY_CANTINIT (a folder this user may not
            # write): the -shm index cannot be made
            code = getattr(ex, "sqlite_errorcode", 0) & 0xFF
            if code not in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY):
                raise
            return _open(uri + "?immutable=1", path)
    except sqlite3.DatabaseError as ex:
        raise unreadable(path, ex) from ex


def _open(uri: str, path: Path) -> sqlite3.Connection:
    import sqlite3

    conn = sqlite3.connect(
        uri,
        uri=True,
        timeout=30.0,
        isolation_level=None,
        check_same_thread=False,
        factory=_connection_type(),
    )
    try:
        _check_is_run_store(conn, path, create=False)
    except sqlite3.Error:
        conn.close()
        raise
    return conn


@functools.cache
def _connection_type() -> type[sqlite3.Connection]:
    import sqlite3

    class RunStoreConnection(sqlite3.Connection):
        """A connection to a run store: closing it is a section a fork waits for (the
        last connection to a file folds its log in, the file locked meanwhile: see
        ``_fork.py``)."""

        def close(self) -> None:
            with file_locked():
                super().close()

    return RunStoreConnection
