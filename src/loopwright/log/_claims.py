"""Which process continues an eval's samples that were in flight when its run stopped.

``lw.eval(..., resume=RUN)`` continues the samples of run ``RUN`` left ``running`` or
``cancelled`` in a new run. Before it does, it takes them: one transaction marks each
sample's metadata (``_continued_by``: this host and pid) if the sample still has the
status and the mark that were read, as ``RunRecorder.reopen`` takes a run's row. Of two
resumes of the same eval at once, one takes its samples; the other is refused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._db import RunStoreError, connect, hostname
from ._fork import file_locked

__all__ = ["CLAIM_KEY", "claim_samples", "claimed_by"]

CLAIM_KEY = "_continued_by"
"""The metadata key of an in-flight sample taken by a resume: ``{"host", "pid", "at"}``."""


def claimed_by(metadata: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """The host and pid of the process that took a sample (``(None, None)``: none)."""
    mark = metadata.get(CLAIM_KEY)
    if not isinstance(mark, Mapping):
        return None, None
    host, pid = mark.get("host"), mark.get("pid")
    return (
        host if isinstance(host, str) else None,
        pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
    )


def claim_samples(
    path: str | os.PathLike[str],
    run_id: str,
    samples: Sequence[tuple[str, str, tuple[str | None, int | None]]],
) -> None:
    """Take the samples of run ``run_id`` for this process, all or none: each one
    ``(key, status, holder)`` only if its row still has that status and that holder
    (:func:`claimed_by`) as read.

    Raises:
        RunStoreError: A sample was taken (or changed) by another process meanwhile, or
            the run store cannot be written.
    """
    import json

    if not samples:
        return
    mark = json.dumps({"host": hostname(), "pid": os.getpid(), "at": time.time()})
    where = Path(path)
    with file_locked():  # (a fork waits for it: see _fork.py)
        _claim(where, run_id, samples, mark)


def _claim(
    where: Path,
    run_id: str,
    samples: Sequence[tuple[str, str, tuple[str | None, int | None]]],
    mark: str,
) -> None:
    import sqlite3

    conn = connect(where)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for key, status, (host, pid) in samples:
            changed = conn.execute(
                "UPDATE samples SET metadata = json_set(COALESCE(metadata, '{}'), "
                f"'$.{CLAIM_KEY}', json(?)) WHERE run_id = ? AND key = ? AND status = ? "
                f"AND json_extract(COALESCE(metadata, '{{}}'), '$.{CLAIM_KEY}.host') IS ? "
                f"AND json_extract(COALESCE(metadata, '{{}}'), '$.{CLAIM_KEY}.pid') IS ?",
                (mark, run_id, key, status, host, pid),
            ).rowcount
            if changed != 1:
                conn.rollback()
                raise RunStoreError(
                    f"sample {key!r} of run {run_id!r} in {str(where)!r} was taken by "
                    "another resume meanwhile (it is being continued there)"
                )
        conn.commit()
    except sqlite3.Error as ex:
        raise RunStoreError(
            f"cannot take the samples of run {run_id!r} in {str(where)!r}: {ex}"
        ) from ex
    finally:
        conn.close()
