"""The bwrap sandbox's disk quota: ``/workspace`` on a size-limited tmpfs.

Each command is a separate bubblewrap run, so the workspace must outlive them: it is a
host folder. When loopwright runs as root, that folder is a tmpfs of
``SandboxLimits.disk_bytes`` mounted on the host (``nosuid``, ``nodev``), so that all
the files of a sandbox together cannot pass the quota (writes fail with "No space left
on device"); its pages count as memory (swappable), not disk. The number of files and
folders is bounded too, one per :data:`BYTES_PER_FILE` of the quota (an empty file takes
none of a tmpfs's size but about 1 KiB of kernel memory for its inode and name: without
the bound, a small quota held millions). It is unmounted when the sandbox's folder is
removed (also by the sweep after a SIGKILL).

Without root (or where mounting fails) there is no total quota: a note is logged once
(INFO), and only ``max_file_bytes`` per file and the timeout bound what a command
writes.

The total memory cap is a memory cgroup (``_cgroup``).
"""

from __future__ import annotations

import logging
import os
import subprocess

__all__ = ["BYTES_PER_FILE", "mount_quota", "unmount_inside"]

logger = logging.getLogger("loopwright.sandboxes")

_noted = False

BYTES_PER_FILE = 4096
"""Bytes of quota per file or folder the workspace may hold (4x what ext4 allows by
default): every file counts as at least a page."""


def _note(reason: str) -> None:
    global _noted
    if not _noted:
        _noted = True
        logger.info(
            "the bwrap sandbox's /workspace has no total disk quota (%s): files go to the "
            "host's disk, each at most SandboxLimits.max_file_bytes",
            reason,
        )


def mount_quota(path: str, size: int, uid: int, gid: int) -> bool:
    """Mount a tmpfs of ``size`` bytes on ``path`` owned by ``uid``:``gid``; whether it
    was mounted (a note is logged once when it cannot be)."""
    if os.geteuid() != 0:
        _note("loopwright does not run as root, which mounting a size-limited tmpfs needs")
        return False
    files = max(1024, size // BYTES_PER_FILE)
    options = f"size={size},nr_inodes={files},mode=0755,uid={uid},gid={gid},nosuid,nodev"
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "loopwright-workspace", path],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        _note(f"mount: {e}")
        return False
    if done.returncode != 0:
        _note(f"mount failed: {done.stderr.decode('utf-8', 'replace').strip()[:200]}")
        return False
    return True


def unmount_inside(root: str) -> None:
    """Unmount (lazily) whatever is mounted on a direct child of ``root``."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name)
        if os.path.ismount(path):
            try:
                subprocess.run(["umount", "-l", path], capture_output=True, timeout=30, check=False)
            except (OSError, subprocess.SubprocessError) as e:
                logger.error("could not unmount %s: %s", path, e)
