"""Starts ``_resume_eval_script.py`` (an eval of three samples that record their steps
in a side file) in a process of its own, for the tests that kill and resume it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests._spawn import spawn_script

SCRIPT = Path(__file__).with_name("_resume_eval_script.py")


def spawn(db: Path, side: Path, *args: str, hang: bool = False) -> subprocess.Popen[str]:
    """The script on ``db``, writing to ``side``; ``hang``: its samples hang mid-step."""
    return spawn_script(SCRIPT, str(db), str(side), *args, env={"HANG": "1" if hang else None})
