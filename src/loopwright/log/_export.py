"""Export a run to one JSON file, and import it back (into any run store)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..model._redact import redact_known
from ._db import RunStoreError, connect, reading, resolve_db
from ._fork import file_locked
from ._reader import _find_run

if TYPE_CHECKING:
    import sqlite3

__all__ = ["EXPORT_FORMAT", "export_run", "import_run", "write_run"]

EXPORT_FORMAT = "loopwright-run"
EXPORT_VERSION = 1

_RUN = (
    "id",
    "name",
    "model",
    "status",
    "created",
    "finished",
    "input",
    "output",
    "messages",
    "error",
    "limit",
    "store_id",
    "metadata",
    "host",
    "pid",
)
_SAMPLE = (
    "key",
    "id",
    "epoch",
    "status",
    "created",
    "finished",
    "input",
    "target",
    "output",
    "messages",
    "scores",
    "error",
    "limit",
    "store_id",
    "metadata",
)
_JSON_COLUMNS = {"input", "output", "messages", "limit", "metadata", "target", "scores"}


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=_not_json)


def _not_json(value: object) -> Any:
    raise ValueError(f"a {type(value).__name__} value where the store holds text or numbers")


def _cols(names: tuple[str, ...]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _row(names: tuple[str, ...], row: tuple[Any, ...]) -> dict[str, Any]:
    return {
        n: (json.loads(v) if n in _JSON_COLUMNS and v is not None else v)
        for n, v in zip(names, row, strict=True)
    }


def _unrow(names: tuple[str, ...], data: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        json.dumps(data.get(n), separators=(",", ":"))
        if n in _JSON_COLUMNS and data.get(n) is not None
        else data.get(n)
        for n in names
    )


def _tool_sets(conn: sqlite3.Connection, run_id: str) -> Callable[[dict[str, Any]], None]:
    """Puts back in a model event's data the tools its row refers to (an export holds
    them inline, as version 1 rows did: any loopwright imports it)."""
    texts: dict[str, Any] = {}

    def inline(data: dict[str, Any]) -> None:
        tools = data.get("tools")
        if not (isinstance(tools, dict) and "$ref" in tools):
            return
        ref = str(tools["$ref"])
        if ref not in texts:
            row = conn.execute(
                "SELECT data FROM tool_sets WHERE run_id = ? AND id = ?", (run_id, ref)
            ).fetchone()
            if row is None:
                raise RunStoreError(f"run {run_id!r} has no tool set {ref!r} (damaged store)")
            texts[ref] = json.loads(row[0])
        data["tools"] = texts[ref]

    return inline


def export_run(
    run: str | None,
    path: str | os.PathLike[str],
    *,
    db: str | os.PathLike[str] | None = None,
) -> Path:
    """Write a run — its row, samples, messages and events — to one JSON file.

    The file is written whole or not at all (a temporary file, renamed).

    Args:
        run: The run id (or a unique prefix); ``None`` for the latest run.
        path: The file to write.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).

    Returns:
        The path written.
    """
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            write_run(run, f, db=db)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def write_run(run: str | None, file: TextIO, *, db: str | os.PathLike[str] | None = None) -> str:
    """Write a run as :func:`export_run` does, to a text stream (e.g. standard output);
    return its id. The JSON is ASCII (other characters are ``\\u`` escapes), so it
    can go to any stream and terminal. A model event's tools are written in its data
    (the store keeps each list once per run, ``tool_sets``), as version 1 rows held them.
    A run still going is written as it was when the export began.

    Raises:
        RunStoreError: No such run (or store).
    """
    from ..model._redact import learn_env_secrets

    learn_env_secrets()  # (the secrets learnt are redacted again: see _write)
    where = resolve_db(db)
    conn = connect(where, create=False)
    try:
        with reading(where):  # (a damaged row, in SQLite or in its JSON: one clear error)
            # one read transaction: the run as it was at one moment, even while it is
            # written (else an event written after the messages were read refers to a
            # message the file does not hold)
            conn.execute("BEGIN")
            run_id = _find_run(conn, run, where)
            _write(conn, run_id, file)
    finally:
        conn.close()
    return run_id


def _write(conn: sqlite3.Connection, run_id: str, f: TextIO) -> None:
    row = conn.execute(f"SELECT {_cols(_RUN)} FROM runs WHERE id = ?", (run_id,)).fetchone()
    head = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "run": _row(_RUN, row)}
    samples = conn.execute(
        f"SELECT {_cols(_SAMPLE)} FROM samples WHERE run_id = ? ORDER BY created, rowid",
        (run_id,),
    )
    head["samples"] = [_row(_SAMPLE, r) for r in samples]
    f.write(redact_known(_dumps(head))[:-1])
    # messages and events are streamed: a long run need not fit in memory twice
    f.write(',"messages":[')
    cursor = conn.execute(
        "SELECT id, sample, seq, role, data FROM messages WHERE run_id = ? ORDER BY sample, seq",
        (run_id,),
    )
    for i, (mid, sample, seq, role, data) in enumerate(cursor):
        item = {"id": mid, "sample": sample, "seq": seq, "role": role}
        item["data"] = json.loads(data)
        f.write(("," if i else "") + redact_known(_dumps(item)))
    f.write('],"events":[')
    cursor = conn.execute(
        "SELECT seq, id, sample, span_id, type, timestamp, data FROM events "
        "WHERE run_id = ? ORDER BY seq",
        (run_id,),
    )
    inline = _tool_sets(conn, run_id)
    for i, (seq, eid, sample, span_id, kind, ts, data) in enumerate(cursor):
        item = {"seq": seq, "id": eid, "sample": sample, "span_id": span_id}
        item |= {"type": kind, "timestamp": ts, "data": json.loads(data)}
        if kind == "model":
            inline(item["data"])
        f.write(("," if i else "") + redact_known(_dumps(item)))
    f.write("]}\n")


def import_run(
    path: str | os.PathLike[str],
    *,
    db: str | os.PathLike[str] | sqlite3.Connection | None = None,
    replace: bool = False,
) -> str:
    """Add a run exported with :func:`export_run` to a run store; return its id.

    Args:
        path: The JSON file.
        db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
        replace: Replace a run with the same id already in the store (else that is an
            error).

    Raises:
        RunStoreError: The file is not a loopwright run export, or the run exists.
    """
    try:
        with Path(path).open(encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as ex:  # (JSON nested too deep)
        reason = "nested too deep" if isinstance(ex, RecursionError) else ex
        raise RunStoreError(f"cannot read the run export {str(path)!r}: {reason}") from ex
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise RunStoreError(f"{str(path)!r} is not a loopwright run export")
    if data.get("version") != EXPORT_VERSION:
        raise RunStoreError(
            f"{str(path)!r} is a version {data.get('version')} export; this loopwright reads "
            f"version {EXPORT_VERSION}"
        )
    import sqlite3

    try:
        run = data["run"]
        run_id = str(run["id"])
    except (KeyError, TypeError) as ex:
        raise RunStoreError(f"{str(path)!r} is a damaged run export: missing {ex}") from ex
    with file_locked():  # (a fork waits for it: see _fork.py)
        own = not isinstance(db, sqlite3.Connection)
        conn = db if isinstance(db, sqlite3.Connection) else connect(resolve_db(db))
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                exists = conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
                if exists and not replace:
                    raise RunStoreError(
                        f"run {run_id!r} is already in the store; pass replace=True to overwrite it"
                    )
                for table in ("runs", "samples", "messages", "events", "tool_sets"):
                    column = "id" if table == "runs" else "run_id"
                    conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (run_id,))
                conn.execute(
                    f"INSERT INTO runs ({_cols(_RUN)}) VALUES ({', '.join('?' * len(_RUN))})",
                    _unrow(_RUN, run),
                )
                conn.executemany(
                    f"INSERT INTO samples (run_id, {_cols(_SAMPLE)}) "
                    f"VALUES (?, {', '.join('?' * len(_SAMPLE))})",
                    [(run_id, *_unrow(_SAMPLE, s)) for s in data.get("samples", [])],
                )
                conn.executemany(
                    "INSERT INTO messages (run_id, id, sample, seq, role, data) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (run_id, m["id"], m["sample"], m["seq"], m["role"], json.dumps(m["data"]))
                        for m in data.get("messages", [])
                    ],
                )
                conn.executemany(
                    "INSERT INTO events (run_id, seq, id, sample, span_id, type, timestamp, data) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            run_id,
                            e["seq"],
                            e["id"],
                            e["sample"],
                            e["span_id"],
                            e["type"],
                            e["timestamp"],
                            json.dumps(e["data"], separators=(",", ":")),
                        )
                        for e in data.get("events", [])
                    ],
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except KeyError as ex:
            raise RunStoreError(f"{str(path)!r} is a damaged run export: missing {ex}") from ex
        # a value of the wrong type or shape, or rows the store's constraints refuse (an id
        # twice, a status missing)
        except (
            TypeError,
            AttributeError,
            OverflowError,
            sqlite3.IntegrityError,
            sqlite3.ProgrammingError,
        ) as ex:
            reason = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
            raise RunStoreError(f"{str(path)!r} is a damaged run export: {reason}") from ex
        finally:
            if own:
                conn.close()
        return run_id
