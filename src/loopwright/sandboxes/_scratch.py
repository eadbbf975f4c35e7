"""A bwrap command's private ``/tmp`` and ``/dev/shm``: bounded in bytes and in files.

Both are fresh for each command and held in memory (tmpfs). bubblewrap's own
``--tmpfs`` takes a size (``--size``) but no bound on the number of files, and an empty
file takes none of a tmpfs's size but about 1 KiB of kernel memory (its inode and
name): a command could make millions. So when loopwright runs as root, each command's
two are tmpfs mounts made on the host for that command (``size=``, and
``nr_inodes=`` = ``SandboxLimits.tmp_files``; ``nosuid``, ``nodev``, owned by the user
bubblewrap runs as), in the sandbox's folder (``tmp-*`` and ``shm-*``), bound into the
sandbox and unmounted as soon as the command ends. Past the bound, making a file fails
with "No space left on device" (``ENOSPC``), like a full disk: an ordinary failure of
the command. A mount that a killed process left is unmounted when the folder is
removed (``_quota.unmount_inside``) or the run's sandbox starts on it again.

Without root (or where mounting is not allowed, as in a container without
``CAP_SYS_ADMIN``) bubblewrap's ``--tmpfs`` is used, with a size only: a note is logged
once (INFO). A memory cgroup (``SandboxLimits.memory_total_bytes``) still counts the
files' kernel memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import logging
import os
import tempfile
from typing import Any

from ._types import SandboxLimits

__all__ = ["PREFIXES", "Scratch", "forget_scratch", "mount_scratch"]

logger = logging.getLogger("loopwright.sandboxes")

PREFIXES = ("tmp-", "shm-")
"""The name prefixes of the mount points in a sandbox's folder."""

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_SHM_BYTES = 64 * 1024 * 1024
_noted = False
_unavailable = False


def _note(reason: str) -> None:
    global _noted
    if not _noted:
        _noted = True
        logger.info(
            "the bwrap sandbox's /tmp and /dev/shm have no bound on their number of files "
            "(%s): only their size (SandboxLimits.tmp_bytes) bounds them",
            reason,
        )


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _mount(root: str, prefix: str, options: str) -> str:
    """A new folder in ``root`` with a tmpfs mounted on it (``nosuid,nodev,OPTIONS``,
    by the system call: no process to start, it takes microseconds)."""
    path = tempfile.mkdtemp(prefix=prefix, dir=root)
    flags = ctypes.c_ulong(_MS_NOSUID | _MS_NODEV)
    done = _libc().mount(b"loopwright-tmp", os.fsencode(path), b"tmpfs", flags, options.encode())
    if done != 0:
        code = ctypes.get_errno()
        os.rmdir(path)
        raise OSError(code, os.strerror(code), path)
    return path


def _unmount(path: str) -> None:
    """Unmount ``path`` (lazily: the files go when no process holds them) and remove
    the mount point; never raises (what is left goes with the sandbox's folder)."""
    if _libc().umount2(os.fsencode(path), _MNT_DETACH) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOENT):  # (not mounted: nothing to do)
            logger.error("could not unmount %s: %s", path, os.strerror(code))
            return
    with contextlib.suppress(OSError):
        os.rmdir(path)


class Scratch:
    """One command's ``/tmp`` and ``/dev/shm``: host mount points, or ``None`` each
    where bubblewrap's ``--tmpfs`` makes them."""

    def __init__(self, tmp: str | None = None, shm: str | None = None) -> None:
        self.tmp = tmp
        self.shm = shm

    def args(self, limits: SandboxLimits) -> list[str]:
        """bubblewrap's arguments that make them (after ``--dev /dev``)."""
        shm = min(limits.tmp_bytes, _SHM_BYTES)
        a = ["--size", str(shm), "--tmpfs", "/dev/shm"] if self.shm is None else []
        a += ["--bind", self.shm, "/dev/shm"] if self.shm is not None else []
        a += ["--remount-ro", "/dev"]  # (not recursive: /dev/shm stays writable)
        if self.tmp is None:
            return [*a, "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
        return [*a, "--bind", self.tmp, "/tmp"]

    def remove(self) -> None:
        """Unmount them (after the command ended)."""
        for path in (self.tmp, self.shm):
            if path is not None:
                _unmount(path)
        self.tmp = self.shm = None


def mount_scratch(root: str, limits: SandboxLimits, uid: int, gid: int) -> Scratch:
    """A command's ``/tmp`` and ``/dev/shm`` in the sandbox folder ``root``: bounded
    tmpfs mounts owned by ``uid``:``gid`` where loopwright may mount them, else
    bubblewrap's own (a note is logged once)."""
    global _unavailable
    if os.geteuid() != 0:
        _note("loopwright does not run as root, which mounting a tmpfs with a bound needs")
        return Scratch()
    if _unavailable:
        return Scratch()
    scratch = Scratch()
    owner = f"mode=0755,uid={uid},gid={gid},nr_inodes={limits.tmp_files}"
    try:
        scratch.tmp = _mount(root, PREFIXES[0], f"size={limits.tmp_bytes},{owner}")
        shm = min(limits.tmp_bytes, _SHM_BYTES)
        scratch.shm = _mount(root, PREFIXES[1], f"size={shm},{owner}")
    except OSError as e:
        scratch.remove()
        if e.errno == errno.EPERM:  # (not allowed here: not tried again)
            _unavailable = True
        _note(f"mounting a tmpfs failed: {e.strerror}")
        return Scratch()
    return scratch


def forget_scratch(root: str) -> None:
    """Unmount what a killed process's commands left in ``root`` (a run's folder that
    its resumed run's sandbox starts on again)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            if name.startswith(PREFIXES):
                _unmount(os.path.join(root, name))
