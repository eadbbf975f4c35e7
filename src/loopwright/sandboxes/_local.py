"""The ``local`` backend: a temporary working folder on the host, with limits but
WITHOUT isolation.

Commands run as the current user, see the whole file system and the network, and
can do anything that user can. Only for trusted code, and for machines where
bubblewrap cannot run; it must be chosen explicitly, and warns when created (an
:class:`UnisolatedSandboxWarning`, shown once per process, and a logged warning).

What it does give: a private temporary working folder (deleted on cleanup), a small
clean environment (the parent's variables are not passed on), the same resource
limits as ``bwrap`` (wall time, CPU time, address space, file size, processes; as
root the kernel does not enforce the process count), capped output, and no process
left behind: each command starts in a new session, and when it ends, times out or
the sandbox is cleaned up, its session, its descendants and every process carrying
its sandbox's tag variable (``LOOPWRIGHT_SANDBOX``; a daemon that escaped the
session and the tree keeps it) are killed.

What it cannot protect: anything the user can read, which includes the environment of
the loopwright process itself (``/proc/<pid>/environ``: API keys set there are
readable by commands), the user's files and keys, and the network. A process that
clears its environment after leaving the session escapes the kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import signal
import stat
import sys
import warnings
from collections.abc import Callable
from typing import Any, Self

from .._errors import ConfigurationError
from ._cgroup import MemoryGroup, memory_group
from ._environment import SandboxEnvironment, file_error
from ._limits import prlimit_prefix, rlimits, set_rlimits
from ._process import descendants, kill_group, run_process, tagged
from ._settle import sandbox_parts
from ._tempdir import make_root, remove_root
from ._types import ExecResult, SandboxLimits

__all__ = ["LocalSandbox", "UnisolatedSandboxWarning"]

logger = logging.getLogger("loopwright.sandboxes")

_NOT_REGULAR = "not a regular file"


TAG = "LOOPWRIGHT_SANDBOX"
"""The variable that marks every process a local sandbox starts (value: its id)."""


class UnisolatedSandboxWarning(UserWarning):
    """A sandbox runs commands on this host without isolation (the ``local`` backend)."""


_warned = False


def _kill_tree(pid: int, tag: bytes | None = None) -> None:
    """SIGKILL the command's process group, every descendant still found in /proc, and
    (with ``tag``) every process carrying the sandbox's tag variable."""
    found = descendants(pid)
    kill_group(pid)
    if tag is not None:
        found += tagged(tag)
    for child in found:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside loopwright (and ``contextlib`` and
    ``asyncio``: ``run_sync`` makes the sandbox in a task), so that a warning names the
    user's line, e.g. their ``use_sandbox("local")`` or ``run_sync(...)``."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    skipped = (package, os.path.dirname(asyncio.__file__) + os.sep)
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(skipped)
        or frame.f_code.co_filename == contextlib.__file__
    ):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def _user_processes() -> int:
    """How many processes the current user runs (they count against RLIMIT_NPROC)."""
    uid = os.getuid()
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _make_local_root() -> str:
    root = make_root("loopwright-local-")
    os.makedirs(os.path.join(root, "workspace"), 0o700, exist_ok=True)  # (a resumed run's)
    return root


class LocalSandbox(SandboxEnvironment):
    """Commands on the host in a temporary folder: limits, but no isolation."""

    name = "local"
    isolated = False

    def __init__(self, root: str, limits: SandboxLimits, memory: MemoryGroup | None = None) -> None:
        self.root = root
        """The host folder behind the sandbox (``workspace/`` is the working folder)."""
        self.workdir = os.path.join(root, "workspace")
        self.python = sys.executable
        self.limits = limits
        self.memory = memory
        """The sandbox's memory cgroup (``SandboxLimits.memory_total_bytes``), if any."""
        self._running: set[int] = set()
        self._id = secrets.token_hex(8)
        self._tag = f"{TAG}={self._id}".encode()

    @classmethod
    async def create(cls, *, limits: SandboxLimits | None = None, **options: Any) -> Self:
        """Make a temporary working folder on the host (no isolation)."""
        if options:
            raise ConfigurationError(f"unknown local sandbox options: {', '.join(sorted(options))}")
        global _warned
        limits = limits or SandboxLimits()
        total, uid, gid = limits.memory_total_bytes, os.getuid(), os.getgid()
        root, memory = await sandbox_parts(
            _make_local_root,
            lambda: memory_group(total, uid, gid) if total is not None else None,
        )
        message = (
            f"local sandbox in {root}: commands run on this host WITHOUT isolation, as "
            "this user, with its files and network (use it only for trusted code; the "
            "'bwrap' backend isolates them)"
        )
        logger.warning("%s", message)
        if not _warned:
            _warned = True
            warnings.warn(message, UnisolatedSandboxWarning, stacklevel=_user_stacklevel())
        return cls(root, limits, memory)

    async def _cleanup(self) -> None:
        for pid in list(self._running):
            _kill_tree(pid)
        await asyncio.to_thread(self._kill_tagged)
        if self.memory is not None:
            await asyncio.to_thread(self.memory.remove)
        await asyncio.to_thread(remove_root, self.root)

    def _kill_tree(self, pid: int) -> None:
        _kill_tree(pid, self._tag)

    def _kill_tagged(self) -> None:
        for pid in tagged(self._tag):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def _exec(
        self,
        cmd: list[str],
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
    ) -> ExecResult:
        # RLIMIT_NPROC counts all of the user's processes: allow the command its share
        # on top of what already runs
        extra = await asyncio.to_thread(_user_processes) if self.limits.max_processes else 0
        spawn: dict[str, Any] = {}
        prefix = prlimit_prefix(self.limits, extra)
        if prefix is None:  # e.g. macOS: set the limits in the child before exec
            values = rlimits(self.limits, extra)
            preexec: Callable[[], None] = lambda: set_rlimits(values)  # noqa: E731
            spawn["preexec_fn"] = preexec
            prefix = []
        base = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": self.workdir,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            TAG: self._id,
        }
        if self.memory is not None:
            prefix = [*self.memory.join_prefix(), *prefix]
        raw = await run_process(
            [*prefix, *cmd],
            input=input,
            timeout=timeout,
            max_output_bytes=self.limits.max_output_bytes,
            kill_tree=self._kill_tree,
            after_exit=self._kill_tree,  # whatever the command left running
            cwd=cwd,
            env={**base, **env},
            spawn_options=spawn,
            label=" ".join(cmd),
            running=self._running,
        )
        return raw.result()

    async def _read_bytes(self, path: str, max_bytes: int) -> bytes:
        def read() -> bytes:
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            try:
                fd = os.open(path, flags)  # (a FIFO opens without waiting for a writer)
            except OSError as e:
                raise file_error(path, e.strerror or str(e), reading=True) from None
            try:
                mode = os.fstat(fd).st_mode
                if stat.S_ISREG(mode):
                    with os.fdopen(fd, "rb", closefd=False) as f:
                        return f.read(max_bytes + 1)
                problem = "Is a directory" if stat.S_ISDIR(mode) else _NOT_REGULAR
            except OSError as e:
                problem = e.strerror or str(e)
            finally:
                os.close(fd)
            raise file_error(path, problem, reading=True)

        return await asyncio.to_thread(read)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        def write() -> None:
            # one open that never waits: a FIFO (even one swapped in by a command running
            # meanwhile) fails with ENXIO instead of blocking for a reader forever
            flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, flags, 0o666)
            except OSError as e:  # e.g. a parent that is a file, a folder, a FIFO
                problem = _NOT_REGULAR if e.errno == errno.ENXIO else e.strerror or str(e)
                raise file_error(path, problem, reading=False) from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):  # (a device)
                    raise file_error(path, _NOT_REGULAR, reading=False)
                os.set_blocking(fd, True)
                os.ftruncate(fd, 0)
                with os.fdopen(fd, "wb", closefd=False) as f:
                    f.write(data)
            except OSError as e:
                raise file_error(path, e.strerror or str(e), reading=False) from None
            finally:
                os.close(fd)

        await asyncio.to_thread(write)
