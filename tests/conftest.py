"""Shared test setup."""

import os
import subprocess
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


@pytest.fixture(autouse=True, scope="session")
def _signing_key_in_a_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The key that signs the options ``loopwright run`` records (``cli/_trust.py``) is
    made in a folder of this session, not in the user's home."""
    path = tmp_path_factory.mktemp("key") / "recorded.key"
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOPWRIGHT_KEY_FILE", str(path))
    yield path
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def _run_sandbox_folders_in_a_temp_dir() -> Iterator[None]:
    """The sandbox folders runs that did not finish keep (``sandboxes/_folders.py``) go
    to a folder of this session, removed at its end (in /var/tmp: a bwrap sandbox's
    unprivileged user must reach it, which it cannot under pytest's own folders)."""
    import shutil
    import tempfile

    shared = "/var/tmp" if os.path.isdir("/var/tmp") else None
    where = tempfile.mkdtemp(prefix="loopwright-test-sandboxes-", dir=shared)
    os.chmod(where, 0o711)
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOPWRIGHT_SANDBOXES", where)
    yield
    mp.undo()
    for folder, names, _ in os.walk(where):  # (a kept workspace's quota tmpfs)
        for name in names:
            if os.path.ismount(os.path.join(folder, name)):
                subprocess.run(["umount", "-l", os.path.join(folder, name)], check=False)
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(autouse=True)
def _run_store_files_closed_after_each_test() -> Iterator[None]:
    """A run store file stays open a few seconds after its last run (for the process's
    next run): close them after each test, so no test sees another's thread."""
    yield
    writer = sys.modules.get("loopwright.log._file_thread")
    if writer is not None:
        writer.close_idle_files()
