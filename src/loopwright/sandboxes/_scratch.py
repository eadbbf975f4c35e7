"""A bwrap command's private ``/tmp`` and ``/dev/shm``: bounded in bytes and in files.

Both are fresh for each command and held in memory (tmpfs). bubblewrap's own
``--tmpfs`` takes a size (``--size``) but no bound on the number of files, and an empty
file takes none of a tmpfs's size but about 1 KiB of kernel memory (its inode and
name): a command could make millions. So when loopwright runs as root, each command's
two are tmpfs mounts made on the host for that command (``size=``, and
``nr_inodes=`` = ``SandboxLimits.tmp_files``; ``nosuid``, ``nodev``, owned by the user
bubblewrap runs as), in the sandbox's folder (``scratch-*``, reused by later commands),
bound into the sandbox and unmounted as soon as the command ends. Whoever could write
in the sandbox's folder (a version that handed it to that user) could replace a
mount point by a link: each is mounted through a descriptor of a folder checked to
be root's (``O_NOFOLLOW``), never by its name, and unmounted without following one. Past the bound,
making a file fails with "No space left on device" (``ENOSPC``), like a full disk: an
ordinary failure of the command. A mount that a killed process left is unmounted when the folder is
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
import stat
import tempfile
from typing import Any

from ._types import SandboxLimits

__all__ = ["PREFIX", "Scratch", "forget_scratch", "mount_scratch"]

logger = logging.getLogger("loopwright.sandboxes")

PREFIX = "scratch-"
"""The name prefix of the mount points in a sandbox's folder."""

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH, _UMOUNT_NOFOLLOW = 2, 8
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


def _own_folder(path: str) -> int | None:
    """An ``O_PATH`` descriptor of ``path`` if it is a folder of this process's user, not
    a link (``None`` else): a mount point replaced by a link to anywhere, mounted by its
    name, would put a tmpfs of the sandbox's user there (over ``/etc``)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:
        return None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        return fd
    os.close(fd)
    return None


def _mount(root: str, free: list[str], options: str) -> str:
    """A folder in ``root`` (a free one of ``free``, else a new one) with a tmpfs mounted
    on it (``nosuid,nodev,OPTIONS``, by the system call: no process to start). It is
    mounted through a descriptor of the folder checked to be ours, never by its name."""
    fd = None
    while free and fd is None:
        path = free.pop()
        fd = _own_folder(path)  # (one that is not ours any more is left alone)
    if fd is None:
        path = tempfile.mkdtemp(prefix=PREFIX, dir=root)
        fd = _own_folder(path)
        if fd is None:
            raise OSError(errno.ELOOP, "the mount point was replaced", path)
    try:
        flags = ctypes.c_ulong(_MS_NOSUID | _MS_NODEV)
        target = f"/proc/self/fd/{fd}".encode()
        done = _libc().mount(b"loopwright-tmp", target, b"tmpfs", flags, options.encode())
        code = ctypes.get_errno()
    finally:
        os.close(fd)
    if done != 0:
        free.append(path)
        raise OSError(code, os.strerror(code), path)
    return path


def _unmount(path: str) -> bool:
    """Unmount ``path`` (lazily: the files go when no process holds them; a link is not
    followed); whether it is free again. Never raises (what is left goes with the
    sandbox's folder)."""
    if _libc().umount2(os.fsencode(path), _MNT_DETACH | _UMOUNT_NOFOLLOW) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOENT):  # (not mounted: nothing to do)
            logger.error("could not unmount %s: %s", path, os.strerror(code))
            return False
    return True


class Scratch:
    """One command's ``/tmp`` and ``/dev/shm``: host mount points, or ``None`` each
    where bubblewrap's ``--tmpfs`` makes them. ``free``: the sandbox's mount points
    that no command uses (making and removing a folder takes milliseconds on some
    disks, every command would pay them)."""

    def __init__(self, free: list[str] | None = None) -> None:
        self.tmp: str | None = None
        self.shm: str | None = None
        self._free = free if free is not None else []

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
            if path is not None and _unmount(path):
                self._free.append(path)
        self.tmp = self.shm = None


def mount_scratch(
    root: str, limits: SandboxLimits, uid: int, gid: int, free: list[str] | None = None
) -> Scratch:
    """A command's ``/tmp`` and ``/dev/shm`` in the sandbox folder ``root``: bounded
    tmpfs mounts owned by ``uid``:``gid`` where loopwright may mount them (on folders
    of ``free``, the sandbox's unused mount points, where there are), else bubblewrap's
    own (a note is logged once)."""
    global _unavailable
    if os.geteuid() != 0:
        _note("loopwright does not run as root, which mounting a tmpfs with a bound needs")
        return Scratch()
    if _unavailable:
        return Scratch()
    scratch = Scratch(free)
    owner = f"mode=0755,uid={uid},gid={gid},nr_inodes={limits.tmp_files}"
    try:
        scratch.tmp = _mount(root, scratch._free, f"size={limits.tmp_bytes},{owner}")
        shm = min(limits.tmp_bytes, _SHM_BYTES)
        scratch.shm = _mount(root, scratch._free, f"size={shm},{owner}")
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
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if name.startswith(PREFIX) and _unmount(os.path.join(root, name)):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, name))
