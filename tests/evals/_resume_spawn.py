"""Starts ``_resume_eval_script.py`` (an eval of three samples that record their steps
in a side file) in a process of its own, for the tests that kill and resume it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import loopwright as lw

SCRIPT = Path(__file__).with_name("_resume_eval_script.py")
SRC = Path(lw.__file__).parent.parent


def spawn(db: Path, side: Path, *args: str, hang: bool = False) -> subprocess.Popen[str]:
    """The script on ``db``, writing to ``side``; ``hang``: its samples hang mid-step."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("HANG", None)
    if hang:
        env["HANG"] = "1"
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(side), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
