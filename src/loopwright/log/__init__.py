"""The run store: every run's events and messages, in one SQLite file, as they happen.

Write with :func:`recording` (``run()`` does it for you); read with :func:`list_runs`
and :func:`load_run`, or a page at a time (:func:`runs_page`, :func:`event_page`...);
move runs between stores with :func:`export_run` and :func:`import_run`. The file is
``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db`` unless you say otherwise. A process
keeps a file open a few seconds after its last run (its next run reuses it):
:func:`close_run_stores` closes them now (before copying a file).
"""

from ._db import DB_ENV, RunStoreError, default_db_path
from ._diff import Divergence, RunDiff, diff_runs
from ._export import export_run, import_run
from ._file_thread import close_idle_files as close_run_stores
from ._pages import (
    EventRow,
    event_at,
    event_bounds,
    event_page,
    runs_page,
    samples_page,
    store_at,
    usage_totals,
)
from ._reader import RunInfo, RunLog, SampleInfo, list_runs, load_run
from ._recording import Recording, RunStatus, SampleRecording, current_recording, recording

__all__ = [
    "DB_ENV",
    "Divergence",
    "EventRow",
    "Recording",
    "RunDiff",
    "RunInfo",
    "RunLog",
    "RunStatus",
    "RunStoreError",
    "SampleInfo",
    "SampleRecording",
    "close_run_stores",
    "current_recording",
    "default_db_path",
    "diff_runs",
    "event_at",
    "event_bounds",
    "event_page",
    "export_run",
    "import_run",
    "list_runs",
    "load_run",
    "recording",
    "runs_page",
    "samples_page",
    "store_at",
    "usage_totals",
]
