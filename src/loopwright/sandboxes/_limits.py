"""Resource limits as a ``prlimit`` prefix (or ``setrlimit`` calls where it is missing)."""

from __future__ import annotations

import resource
import shutil

from ._types import SandboxLimits

__all__ = ["prlimit_prefix", "rlimits", "set_rlimits"]


def rlimits(limits: SandboxLimits, extra_processes: int = 0) -> dict[int, int]:
    """The ``RLIMIT_*`` values (soft = hard) ``limits`` asks for."""
    out: dict[int, int] = {}
    if limits.cpu_seconds is not None:
        out[resource.RLIMIT_CPU] = limits.cpu_seconds
    if limits.memory_bytes is not None:
        out[resource.RLIMIT_AS] = limits.memory_bytes
    if limits.max_processes is not None:
        out[resource.RLIMIT_NPROC] = limits.max_processes + extra_processes
    if limits.max_file_bytes is not None:
        out[resource.RLIMIT_FSIZE] = limits.max_file_bytes
    return out


_FLAGS = {
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_AS: "--as",
    resource.RLIMIT_NPROC: "--nproc",
    resource.RLIMIT_FSIZE: "--fsize",
}


def prlimit_prefix(limits: SandboxLimits, extra_processes: int = 0) -> list[str] | None:
    """``["/usr/bin/prlimit", "--cpu=…", …, "--"]``, or ``None`` without ``prlimit``.

    ``prlimit`` (util-linux) sets the limits and then runs the command, so the limits
    bind the command and everything it starts, and nothing before it.
    """
    path = shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if path is None:
        return None
    flags = [f"{_FLAGS[k]}={v}" for k, v in rlimits(limits, extra_processes).items()]
    return [path, *flags, "--"]


def set_rlimits(values: dict[int, int]) -> None:
    """Apply ``values`` to the calling process (used in a child before ``exec``)."""
    for key, value in values.items():
        resource.setrlimit(key, (value, value))
