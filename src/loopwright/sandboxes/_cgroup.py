"""A sandbox's total memory cap: a memory cgroup of its own, below loopwright's.

Every command of a sandbox (``bwrap`` or ``local``) starts inside the sandbox's cgroup
(a shell writes its own pid to the cgroup's ``cgroup.procs`` and then runs the command),
so all of its processes, in every command, share one limit:
``SandboxLimits.memory_total_bytes``.
Past it the kernel's OOM killer ends a process of that sandbox, never one of the host.
As root, the files in the sandbox's ``/workspace`` (a tmpfs) count too.

The group is made inside the cgroup loopwright itself runs in (nothing else of the host
is touched), with cgroup v2 (``memory.max``) where that cgroup delegates the memory
controller to its children, or cgroup v1 (``memory.limit_in_bytes``, and the swap
limit where there is one) where the v1 memory hierarchy is mounted writable. (cgroup
v2 lets a cgroup delegate a controller only while no process is in it, the root cgroup
aside: so, in practice, v2 is used where loopwright runs in the root cgroup; loopwright
does not move itself into a child cgroup to free its own.) Its control files are handed
to the user bubblewrap runs as. Where neither works (no
permission, no controller) a note is logged once (INFO) and memory stays limited per
process only (``memory_bytes``).

Groups are named ``loopwright-<pid>-<n>``: they are removed when their sandbox is
cleaned up, and groups of a process that is gone (a SIGKILL) when the next one is made.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time

__all__ = ["MemoryGroup", "memory_group"]

logger = logging.getLogger("loopwright.sandboxes")

_CGROUP_ROOT = "/sys/fs/cgroup"
_PROC_CGROUP = "/proc/self/cgroup"  # (the cgroups this process is in)
_PREFIX = "loopwright-"
_counter = itertools.count(1)
_noted = False
_swept: set[str] = set()


def _note(reason: str) -> None:
    global _noted
    if not _noted:
        _noted = True
        logger.info(
            "sandboxes have no total memory cap (%s): memory is limited per process "
            "(SandboxLimits.memory_bytes), so a command may use up to memory_bytes x "
            "max_processes",
            reason,
        )


def _own_path(controller: str | None) -> str | None:
    """This process's cgroup path for ``controller`` (v1), or the v2 path (``None``)."""
    try:
        with open(_PROC_CGROUP, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (
            controller is not None and controller in names.split(",")
        ):
            return path
    return None


def _parent() -> tuple[str, int] | None:
    """The folder to make groups in and the cgroup version, or ``None``."""
    v2_own = _own_path(None)
    if v2_own is not None and os.path.exists(os.path.join(_CGROUP_ROOT, "cgroup.controllers")):
        parent = os.path.join(_CGROUP_ROOT, v2_own.lstrip("/"))
        with (
            contextlib.suppress(OSError),
            open(os.path.join(parent, "cgroup.subtree_control")) as f,
        ):
            if "memory" in f.read().split():
                return parent, 2
    v1_own = _own_path("memory")
    v1_root = os.path.join(_CGROUP_ROOT, "memory")
    if v1_own is not None and os.path.exists(os.path.join(v1_root, "memory.limit_in_bytes")):
        return os.path.join(v1_root, v1_own.lstrip("/")), 1
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _sweep(parent: str) -> None:
    """Remove the empty groups of processes that are gone (once per parent)."""
    if parent in _swept:
        return
    _swept.add(parent)
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            if not name.startswith(_PREFIX):
                continue
            pid = name[len(_PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))


class MemoryGroup:
    """One sandbox's memory cgroup: ``procs`` is the file a process joins it through."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.procs = os.path.join(path, "cgroup.procs")

    def join_prefix(self) -> list[str]:
        """A command line prefix that moves the command into this group, then runs it
        (a shell writes its own pid to ``cgroup.procs``; what it starts stays inside)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', self.procs]

    def peak_bytes(self) -> int | None:
        """The most memory the group has used (v1 ``max_usage_in_bytes``, v2 ``peak``)."""
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            with contextlib.suppress(OSError, ValueError), open(os.path.join(self.path, name)) as f:
                return int(f.read().strip())
        return None

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group once its processes are gone (they are being killed)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if time.monotonic() > deadline:
                    logger.warning("could not remove the sandbox's cgroup %s: %s", self.path, e)
                    return
                time.sleep(0.02)


def memory_group(limit: int, uid: int, gid: int) -> MemoryGroup | None:
    """A new memory cgroup capped at ``limit`` bytes whose ``cgroup.procs`` the user
    ``uid``:``gid`` may write, or ``None`` where none can be made (a note is logged)."""
    found = _parent()
    if found is None:
        _note("no memory cgroup controller that loopwright may use")
        return None
    parent, version = found
    _sweep(parent)
    path = os.path.join(parent, f"{_PREFIX}{os.getpid()}-{next(_counter)}")
    try:
        os.mkdir(path, 0o755)
    except OSError as e:
        _note(f"cannot make a cgroup in {parent}: {e.strerror}")
        return None
    group = MemoryGroup(path)
    try:
        if version == 2:
            _write(path, "memory.max", limit)
            with contextlib.suppress(OSError):
                _write(path, "memory.swap.max", 0)
        else:
            _write(path, "memory.limit_in_bytes", limit)
            with contextlib.suppress(OSError):  # no swap accounting on this kernel
                _write(path, "memory.memsw.limit_in_bytes", limit)
        for name in ("cgroup.procs", "tasks"):
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(path, name), uid, gid)
    except OSError as e:
        group.remove(wait=0)
        _note(f"cannot set up the cgroup {path}: {e.strerror}")
        return None
    return group


def _write(path: str, name: str, value: int) -> None:
    with open(os.path.join(path, name), "w", encoding="ascii") as f:
        f.write(str(value))
