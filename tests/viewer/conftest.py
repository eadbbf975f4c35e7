from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._store import make_store

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


class Viewer:
    def __init__(self, url: str, db: Path, ids: dict[str, str]) -> None:
        self.url, self.db, self.ids = url, db, ids


def start_viewer(db: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``loopwright view`` in a process of its own, on any free port; its URL."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "view", "--db", str(db), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("loopwright view: "):
        proc.kill()
        raise AssertionError(
            f"no URL printed: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, line.split()[2]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    db = tmp_path_factory.mktemp("viewer") / "runs.db"
    ids = make_store(db)
    proc, url = start_viewer(db)
    try:
        yield Viewer(url, db, ids)
    finally:
        proc.terminate()
        proc.wait(10)
