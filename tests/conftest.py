"""Shared test setup."""

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
