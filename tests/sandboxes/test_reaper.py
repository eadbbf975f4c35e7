"""As PID 1 (a container without an init), orphaned zombies are reaped, and the exit
statuses of loopwright's own children are not stolen. Runs a real PID namespace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

SCRIPT = """
import asyncio, json, os, subprocess
import loopwright as lw
from loopwright.sandboxes import _reaper

_reaper.GRACE = 0.5
_reaper._INTERVAL = 0.1

async def main():
    async with lw.use_sandbox("local") as sb:
        for _ in range(10):  # each leaves an orphan that is handed to PID 1
            await sb.exec(["sh", "-c", "(sleep 0.1 &); true"])
        statuses = []
        for _ in range(3):
            statuses.append((await sb.exec(["sh", "-c", "sleep 0.2; exit 3"])).returncode)
            statuses.append(subprocess.run(["sh", "-c", "sleep 0.2; exit 4"]).returncode)
        await asyncio.sleep(1.5)
        print(json.dumps({"pid": os.getpid(), "statuses": statuses,
                          "zombies": len(_reaper.zombie_children(os.getpid()))}))

asyncio.run(main())
"""


def _can_be_pid_1() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, check=False
    )
    return done.returncode == 0


@pytest.mark.skipif(not _can_be_pid_1(), reason="needs root and unshare for a PID namespace")
def test_zombies_are_reaped_when_loopwright_is_pid_1() -> None:
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["pid"] == 1
    assert report["statuses"] == [3, 4] * 3  # no exit status was stolen
    assert report["zombies"] == 0
