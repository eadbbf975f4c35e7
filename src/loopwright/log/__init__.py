"""The run store: every run's events and messages, in one SQLite file, as they happen.

This part writes and reads; it does not decide. The run scope (``lw.recording()``,
``lw.run()``: ``loopwright.runtime``) opens a run and gives it a :class:`RunRecorder`,
which writes the events the run's transcripts hear into SQLite by a background thread.
Read with :func:`list_runs` and :func:`load_run`; move runs between stores with
:func:`export_run` and :func:`import_run`. The file is ``$LOOPWRIGHT_DB`` or
``./loopwright-runs.db`` unless you say otherwise.
"""

from ._db import DB_ENV, RunStoreError, default_db_path, resolve_db
from ._export import export_run, import_run
from ._outcome import RunEnd, RunStatus, json_text
from ._reader import RunInfo, RunLog, SampleInfo, list_runs, load_run
from ._recording import RunRecorder

__all__ = [
    "DB_ENV",
    "RunEnd",
    "RunInfo",
    "RunLog",
    "RunRecorder",
    "RunStatus",
    "RunStoreError",
    "SampleInfo",
    "default_db_path",
    "export_run",
    "import_run",
    "json_text",
    "list_runs",
    "load_run",
    "resolve_db",
]
