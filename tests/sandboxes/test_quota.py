"""A bwrap sandbox's /workspace has a total disk quota (as root: a size-limited tmpfs),
unmounted and removed at cleanup; without root, a note says there is none."""

from __future__ import annotations

import logging
import os

import pytest

from loopwright.sandboxes import SandboxLimits
from loopwright.sandboxes._bwrap import BwrapSandbox
from loopwright.sandboxes._quota import mount_quota

from .conftest import BWRAP_PROBLEM, exists

MiB = 1024 * 1024


def _mounts() -> str:
    with open("/proc/self/mounts", encoding="utf-8") as f:
        return f.read()


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
@pytest.mark.skipif(os.geteuid() != 0, reason="the quota needs root")
async def test_the_workspace_has_a_total_quota() -> None:
    limits = SandboxLimits(disk_bytes=32 * MiB, max_file_bytes=24 * MiB)
    sb = await BwrapSandbox.create(limits=limits)
    try:
        workspace = os.path.join(sb.root, "workspace")
        assert workspace in _mounts()
        # each file is under the per-file limit; together they pass the quota
        script = "for i in 1 2 3; do head -c 20000000 /dev/zero > f$i || exit 7; done"
        r = await sb.exec(["sh", "-c", script])
        assert r.returncode == 7 and "No space left on device" in r.stderr
        du = await sb.exec(["du", "-sb", "."])
        assert int(du.stdout.split()[0]) <= 32 * MiB
        assert (await sb.exec(["sh", "-c", "rm f*; echo again > g; cat g"])).stdout == "again\n"
    finally:
        await sb.cleanup()
    assert not exists(sb.root)
    assert sb.root not in _mounts()


def test_without_root_a_note_says_there_is_no_quota(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: object
) -> None:
    from loopwright.sandboxes import _quota

    monkeypatch.setattr(_quota, "_noted", False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with caplog.at_level(logging.INFO, logger="loopwright.sandboxes"):
        assert mount_quota(str(tmp_path), MiB, 1000, 1000) is False
    assert "no total disk quota" in caplog.text and "not run as root" in caplog.text


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
@pytest.mark.skipif(os.geteuid() != 0, reason="the quota needs root")
async def test_empty_files_cannot_pass_the_quota() -> None:
    # an empty file takes no byte of a tmpfs's size but about 1 KiB of kernel memory
    # (inode, name): without a bound on their number, 4 MiB of quota held millions
    limits = SandboxLimits(disk_bytes=4 * MiB, memory_total_bytes=None, timeout=60)
    sb = await BwrapSandbox.create(limits=limits)
    try:
        script = (
            "import os\n"
            "try:\n"
            "    for i in range(20000): open('f%d' % i, 'w').close()\n"
            "except OSError as e: print(i, e.strerror)\n"
        )
        r = await sb.exec(["python3", "-c", script])
        made, _, error = r.stdout.strip().partition(" ")
        assert error == "No space left on device", r.stdout + r.stderr
        assert int(made) <= 4 * MiB // 4096
        # the sandbox goes on once files are removed
        r = await sb.exec(["sh", "-c", "rm -f f*; echo again > g; cat g"])
        assert r.stdout == "again\n", r.stderr
    finally:
        await sb.cleanup()
    assert not exists(sb.root)
