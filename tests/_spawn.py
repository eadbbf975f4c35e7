"""Starts a test's Python script in a process of its own, on this tree's loopwright."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import loopwright as lw

SRC = Path(lw.__file__).parent.parent


def spawn_script(
    script: Path, *args: str, env: Mapping[str, str | None] = {}
) -> subprocess.Popen[str]:
    """``python script *args`` with this tree on ``PYTHONPATH``; ``env`` sets (or, with
    ``None``, removes) variables of its environment."""
    full = {**os.environ, "PYTHONPATH": str(SRC)}
    for name, value in env.items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
