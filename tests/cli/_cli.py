"""Running the real ``loopwright`` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def env_for(db: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LOOPWRIGHT_DB"] = str(db)
    env["COLUMNS"] = "200"  # wide tables: rows are not wrapped
    env.pop("LOOPWRIGHT_MODEL", None)
    return env


def cli(
    *args: str,
    cwd: Path,
    db: Path | None = None,
    input: str | None = None,
    timeout: float = 60,
    columns: str | None = "200",
) -> Result:
    """``python -m loopwright.cli ARGS`` in ``cwd``; the run store defaults to cwd/runs.db.
    ``columns`` is ``$COLUMNS`` (``None``: not set, as when a user pipes the output)."""
    env = env_for(db or cwd / "runs.db")
    if columns is None:
        env.pop("COLUMNS", None)
    else:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", *args],
        cwd=cwd,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def script(path: Path, items: list[Any]) -> str:
    """Write a mock-model script; returns the ``-M outputs=@...`` argument."""
    path.write_text(json.dumps(items))
    return f"outputs=@{path}"


def shown_digest(listing: Result) -> str:
    """The digest ``runs approve RUN`` prints of the calls it showed whole (for
    ``--all --shown``)."""
    import re

    found = re.search(r"--all --shown ([0-9a-f]{64})\b", listing.err)
    assert found is not None, listing.err
    return found.group(1)
