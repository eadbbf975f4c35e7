"""Shared test setup."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _run_store_in_a_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Runs record to a throwaway SQLite file, never to the checkout."""
    path = tmp_path_factory.mktemp("runs") / "runs.db"
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOPWRIGHT_DB", str(path))
    yield path
    mp.undo()


@pytest.fixture(autouse=True)
def _run_store_files_closed_after_each_test() -> Iterator[None]:
    """A run store file stays open a few seconds after its last run (for the process's
    next run): close them after each test, so no test sees another's thread."""
    yield
    writer = sys.modules.get("loopwright.log._file_thread")
    if writer is not None:
        writer.close_idle_files()
