"""The ``bwrap`` backend: each command runs in fresh Linux namespaces via bubblewrap.

What a command sees: the host's ``/usr`` read-only (plus the ``/bin``, ``/lib``…
links to it), a minimal ``/etc``, a new ``/proc`` and ``/dev``, a private writable
``/workspace`` (a host folder kept for the sandbox's life; as root, a tmpfs of
``disk_bytes``: see ``_quota``), a ``/tmp`` and ``/dev/shm`` fresh for each command,
bounded in size and (as root) in number of files (see ``_scratch``), and nothing else:
no ``/root``, no home folders, no project files. It runs as an unprivileged user in its
own user, PID, network (no network at all), IPC, UTS (hostname ``sandbox``) and cgroup
namespaces, with an empty environment plus a few variables, and may not create user
namespaces of its own. A seccomp filter (see ``_seccomp``) makes the system calls it
has no use for fail. When loopwright runs as root, bubblewrap itself is started as an
unprivileged host user (``nobody`` by default), so the sandboxed code is never host
root under any mapping.

Every command is a separate bubblewrap run: files in ``/workspace`` persist between
commands, processes and ``/tmp`` do not. Every command starts in the sandbox's memory
cgroup (``memory_total_bytes``, see ``_cgroup``), so its processes in all its commands
share one memory cap.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from .._errors import ConfigurationError
from ._cgroup import MemoryGroup, memory_group
from ._environment import READ_CHECKS, SandboxEnvironment, file_error
from ._folders import sandbox_folder
from ._limits import prlimit_prefix
from ._process import RawResult, kill_group, run_process
from ._quota import mount_quota
from ._scratch import Scratch, forget_scratch, mount_scratch
from ._seccomp import program_fd, seccomp_program
from ._settle import sandbox_parts
from ._tempdir import make_root, remove_root
from ._types import ExecResult, SandboxError, SandboxLimits, SandboxUnavailableError

__all__ = ["BwrapSandbox"]

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y --no-install-recommends "
    "bubblewrap`; Fedora: `dnf install bubblewrap`; Arch: `pacman -S bubblewrap`), or "
    "choose the unisolated backend explicitly with use_sandbox('local')"
)
NOBODY = 65534
_HOST_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class _Probe:
    bwrap: str
    disable_userns: bool


_probes: dict[int, _Probe] = {}


async def _probe(host_uid: int, host_gid: int) -> _Probe:
    """Check once per host uid that bubblewrap is installed and can make a sandbox."""
    if host_uid in _probes:
        return _probes[host_uid]
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailableError(
            f"the bwrap sandbox needs Linux (this is {sys.platform}); choose the "
            "unisolated backend explicitly with use_sandbox('local') for trusted code"
        )
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    if prlimit_prefix(SandboxLimits()) is None:
        raise SandboxUnavailableError(
            "prlimit is missing (it applies the sandbox's resource limits); install "
            "util-linux (Debian/Ubuntu: `apt-get install -y util-linux`)"
        )
    help_proc = await asyncio.create_subprocess_exec(
        bwrap, "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    help_text, _ = await help_proc.communicate()
    probe = _Probe(bwrap=bwrap, disable_userns=b"--disable-userns" in help_text)
    with sandbox_folder(None):  # (not the run's folder: the probe's goes at once)
        root, _ = await sandbox_parts(lambda: _make_sandbox_root(host_uid, host_gid), _no_group)
    try:
        sandbox = BwrapSandbox(root, SandboxLimits(), host_uid, host_gid, probe)
        try:
            result = await sandbox._exec(
                ["true"], input=None, cwd=sandbox.workdir, env={}, timeout=30
            )
        except SandboxError as e:
            result = ExecResult(success=False, returncode=-1, stderr=str(e))
    finally:
        await asyncio.to_thread(remove_root, root)
    if not result.success:
        raise SandboxUnavailableError(
            f"bubblewrap is installed but cannot create a sandbox here: "
            f"{result.stderr.strip() or f'exit {result.returncode}'}. It needs unprivileged "
            "user namespaces (check `sysctl user.max_user_namespaces`, "
            "`kernel.unprivileged_userns_clone` and AppArmor's "
            "`kernel.apparmor_restrict_unprivileged_userns`); inside a container, run it "
            "with user namespaces allowed. Or choose use_sandbox('local') (unisolated)"
        )
    _probes[host_uid] = probe
    return probe


def _no_group() -> None:
    return None


def _make_sandbox_root(host_uid: int, host_gid: int, disk_bytes: int | None = None) -> str:
    """The host folder of one sandbox: ``workspace/`` (with a quota of ``disk_bytes``
    where it can be had, see ``_quota``) and the generated ``etc/`` files."""
    root = make_root()  # (root's, as every folder in it but the workspace)
    workspace = os.path.join(root, "workspace")
    etc = os.path.join(root, "etc")
    for path in (workspace, etc):  # (a kept folder's, from a version that handed it over)
        if os.path.islink(path) or (path == etc and _not_mine(path)):
            _remove_entry(path)
    os.makedirs(workspace, 0o755, exist_ok=True)  # (a resumed run's is there)
    os.makedirs(etc, 0o755, exist_ok=True)
    forget_scratch(root)  # (a killed process's commands' /tmp, in a resumed run's folder)
    if disk_bytes is not None and not os.path.ismount(workspace):  # (a resumed run's is)
        mount_quota(workspace, disk_bytes, host_uid, host_gid)
    files = {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            "sandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
        "group": "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
        "hostname": "sandbox\n",
        "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    }
    for name, text in files.items():
        with open(os.path.join(etc, name), "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(os.path.join(etc, name), 0o644)
    if host_uid != os.geteuid() or host_gid != os.getegid():
        # bubblewrap, run as host_uid, passes through the folder (0711) to what it binds;
        # the folder stays root's: that user could put a link in it for root to follow
        os.chmod(root, 0o711)
        os.chown(workspace, host_uid, host_gid, follow_symlinks=False)
    return root


def _not_mine(path: str) -> bool:
    """Whether ``path`` exists and is not a folder of this user's."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return not (os.path.isdir(path) and st.st_uid == os.geteuid())


def _remove_entry(path: str) -> None:
    """Remove ``path`` (a link itself, never what it points to; a folder with all in it)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


class BwrapSandbox(SandboxEnvironment):
    """Commands isolated by bubblewrap (Linux namespaces); see the module docstring."""

    name = "bwrap"
    isolated = True
    workdir = "/workspace"
    python = "/usr/bin/python3"

    def __init__(
        self,
        root: str,
        limits: SandboxLimits,
        host_uid: int,
        host_gid: int,
        probe: _Probe,
        memory: MemoryGroup | None = None,
    ) -> None:
        self.root = root
        """The host folder behind the sandbox (``workspace/`` is its ``/workspace``)."""
        self.limits = limits
        self.host_uid = host_uid
        self.host_gid = host_gid
        self._probe = probe
        self.memory = memory
        """The sandbox's memory cgroup (``SandboxLimits.memory_total_bytes``), if any."""
        self._running: set[int] = set()
        self._scratch: list[str] = []  # mount points no command uses (_scratch.py)
        self._etc = self._etc_binds()

    @classmethod
    async def create(
        cls,
        *,
        limits: SandboxLimits | None = None,
        host_uid: int | None = None,
        host_gid: int | None = None,
        **options: Any,
    ) -> Self:
        """Start a bubblewrap sandbox.

        Args:
            limits: Limits for every command.
            host_uid: The host user bubblewrap runs as. Default: the current user, or
                ``nobody`` (65534) when that is root. Changing it needs root.
            host_gid: The host group, likewise.

        Raises:
            SandboxUnavailableError: bubblewrap is missing or cannot make namespaces
                here; the message names the fix.
        """
        if options:
            raise ConfigurationError(f"unknown bwrap sandbox options: {', '.join(sorted(options))}")
        euid = os.geteuid()
        uid = host_uid if host_uid is not None else (NOBODY if euid == 0 else euid)
        gid = host_gid if host_gid is not None else (NOBODY if euid == 0 else os.getegid())
        if uid == 0:
            raise SandboxUnavailableError("the bwrap sandbox must not run as host root (uid 0)")
        probe = await _probe(uid, gid)
        limits = limits or SandboxLimits()
        total = limits.memory_total_bytes
        root, memory = await sandbox_parts(
            lambda: _make_sandbox_root(uid, gid, limits.disk_bytes),
            lambda: memory_group(total, uid, gid) if total is not None else None,
        )
        return cls(root, limits, uid, gid, probe, memory)

    async def _cleanup(self) -> None:
        for pid in list(self._running):
            kill_group(pid)
        if self.memory is not None:
            await asyncio.to_thread(self.memory.remove)
        await asyncio.to_thread(remove_root, self.root)

    def _etc_binds(self) -> list[str]:
        args: list[str] = []
        for name in sorted(os.listdir(os.path.join(self.root, "etc"))):
            args += ["--ro-bind", os.path.join(self.root, "etc", name), f"/etc/{name}"]
        for name in _HOST_ETC:
            if os.path.exists(f"/etc/{name}"):
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        return args

    def _argv(
        self,
        cmd: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        seccomp_fd: int | None = None,
        scratch: Scratch | None = None,
    ) -> list[str]:
        a = [self._probe.bwrap, "--unshare-all", "--unshare-user"]
        if seccomp_fd is not None:
            a += ["--seccomp", str(seccomp_fd)]
        if self._probe.disable_userns:
            a.append("--disable-userns")
        a += ["--uid", "1000", "--gid", "1000", "--hostname", "sandbox"]
        a += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        a += ["--ro-bind", "/usr", "/usr"]
        for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = f"/{top}"
            if os.path.islink(path):
                a += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):  # a system without merged /usr
                a += ["--ro-bind", path, path]
        a += self._etc
        a += ["--proc", "/proc", "--dev", "/dev"]
        a += (scratch or Scratch()).args(self.limits)  # /dev/shm, /tmp (_scratch.py)
        a += ["--bind", os.path.join(self.root, "workspace"), self.workdir]
        a += ["--remount-ro", "/", "--chdir", cwd, "--clearenv"]
        base = {
            "PATH": _SANDBOX_PATH,
            "HOME": self.workdir,
            "USER": "sandbox",
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            "TERM": "dumb",
        }
        for key, value in {**base, **env}.items():
            a += ["--setenv", key, value]
        prefix = prlimit_prefix(self.limits)
        assert prefix is not None  # checked by the probe
        if self.memory is not None:  # join the sandbox's memory cgroup, then run bwrap
            a = [*self.memory.join_prefix(), *a]
        return [*a, *prefix, *cmd]

    async def _run(
        self,
        cmd: list[str],
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
        max_output_bytes: int,
    ) -> RawResult:
        spawn: dict[str, Any] = {}
        if self.host_uid != os.geteuid() or self.host_gid != os.getegid():
            spawn = {"user": self.host_uid, "group": self.host_gid, "extra_groups": []}
        # (mounting takes microseconds: no await, so nothing cancels in between)
        scratch = mount_scratch(self.root, self.limits, self.host_uid, self.host_gid, self._scratch)
        fd: int | None = None
        try:
            program = seccomp_program()
            fd = program_fd(program) if program is not None else None
            if fd is not None:
                spawn["pass_fds"] = (fd,)
            return await self._spawn(
                cmd, cwd, env, fd, spawn, input, timeout, max_output_bytes, scratch
            )
        finally:
            scratch.remove()
            if fd is not None:
                os.close(fd)

    async def _spawn(
        self,
        cmd: list[str],
        cwd: str,
        env: dict[str, str],
        fd: int | None,
        spawn: dict[str, Any],
        input: bytes | None,
        timeout: float,
        max_output_bytes: int,
        scratch: Scratch,
    ) -> RawResult:
        return await run_process(
            self._argv(cmd, cwd, env, fd, scratch),
            input=input,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
            kill_tree=kill_group,  # bwrap dies, and --die-with-parent takes the rest down
            cwd=self.root,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            spawn_options=spawn,
            label=" ".join(cmd),
            running=self._running,
        )

    async def _exec(
        self,
        cmd: list[str],
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
    ) -> ExecResult:
        raw = await self._run(
            cmd,
            input=input,
            cwd=cwd,
            env=env,
            timeout=timeout,
            max_output_bytes=self.limits.max_output_bytes,
        )
        return raw.result()

    async def _read_bytes(self, path: str, max_bytes: int) -> bytes:
        raw = await self._run(
            ["sh", "-c", READ_CHECKS + 'exec head -c "$2" -- "$1"', "sh", path, str(max_bytes + 1)],
            input=None,
            cwd=self.workdir,
            env={},
            timeout=self.file_timeout(),
            max_output_bytes=max_bytes + 1,
        )
        if raw.returncode != 0 and not raw.truncated:
            raise file_error(path, raw.stderr.decode("utf-8", "replace"), reading=True)
        return raw.stdout
