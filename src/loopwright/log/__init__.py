"""The run store: every run's events and messages, in one SQLite file, as they happen.

This part writes and reads; it does not decide. The run scope (``lw.recording()``,
``lw.run()``: ``loopwright.runtime``) opens a run and gives it a :class:`RunRecorder`,
which writes the events the run's transcripts hear into SQLite by a background thread.
Read with :func:`list_runs` and :func:`load_run`, or a page at a time
(:func:`runs_page`, :func:`event_page`...); compare two runs with :func:`diff_runs`;
move runs between stores with :func:`export_run` and :func:`import_run`. The file is
``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db`` unless you say otherwise. A process
keeps a file open a few seconds after its last run (its next run reuses it):
:func:`close_run_stores` closes them now (before copying a file).
"""

from ._db import DB_ENV, RunStoreError, default_db_path, resolve_db
from ._diff import Divergence, RunDiff, diff_runs
from ._export import export_run, import_run
from ._file_thread import close_idle_files as close_run_stores
from ._outcome import RunEnd, RunStatus, json_text
from ._pages import (
    EventRow,
    event_at,
    event_bounds,
    event_page,
    last_messages,
    runs_page,
    samples_page,
    store_at,
    usage_totals,
)
from ._reader import RunInfo, RunLog, SampleInfo, list_runs, load_run
from ._recording import RunRecorder

__all__ = [
    "DB_ENV",
    "Divergence",
    "EventRow",
    "RunDiff",
    "RunEnd",
    "RunInfo",
    "RunLog",
    "RunRecorder",
    "RunStatus",
    "RunStoreError",
    "SampleInfo",
    "close_run_stores",
    "default_db_path",
    "diff_runs",
    "event_at",
    "event_bounds",
    "event_page",
    "export_run",
    "import_run",
    "json_text",
    "last_messages",
    "list_runs",
    "load_run",
    "resolve_db",
    "runs_page",
    "samples_page",
    "store_at",
    "usage_totals",
]
