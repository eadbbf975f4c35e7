"""What sandboxes return and raise, and the limits every command runs under."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .._errors import ConfigurationError, LoopwrightError

__all__ = [
    "ExecResult",
    "ExecTimeoutError",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailableError",
]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


class ExecResult(BaseModel):
    """The outcome of one command run in a sandbox.

    Attributes:
        success: Whether the command exited with status 0.
        returncode: The exit status; negative when a signal ended the command (``-9``
            when it was killed, e.g. because its output passed the cap or its timeout).
            Under ``bwrap`` a signal from inside the sandbox (a resource limit, a crash)
            shows as a shell shows it, ``128 + n`` (``137`` for ``SIGKILL``).
        stdout: What the command wrote to standard output (UTF-8, undecodable bytes
            replaced), at most ``SandboxLimits.max_output_bytes`` of it.
        stderr: The same for standard error.
        truncated: ``True`` when either stream passed ``max_output_bytes``: the rest was
            dropped and the command was stopped. Truncation is never silent.
    """

    model_config = ConfigDict(defer_build=True)

    success: bool
    returncode: int
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False


class SandboxLimits(BaseModel):
    """Resource limits applied to every command a sandbox runs.

    ``None`` turns a limit off. The defaults are safe for code a model writes: generous
    for ordinary scripts, small enough that a runaway command cannot hurt the host.

    Attributes:
        timeout: Wall-clock seconds per command (positive and finite: a command always
            ends); at the deadline the whole process tree is killed and
            :class:`ExecTimeoutError` is raised.
        cpu_seconds: CPU seconds per process (``RLIMIT_CPU``).
        memory_bytes: Address space per process (``RLIMIT_AS``); an allocation past it
            fails inside the sandbox (``MemoryError`` in Python).
        memory_total_bytes: Memory of all the sandbox's processes together, in every
            command (a memory cgroup of its own, where loopwright may make one; past it
            the kernel ends a process of the sandbox). As root it counts the
            files in ``/workspace`` too (a tmpfs). Where no cgroup can be made a note is
            logged and only ``memory_bytes`` per process applies.
        max_processes: Processes the command may have at once (``RLIMIT_NPROC``; under
            ``bwrap`` counted per command, under ``local`` on top of what the host user
            already runs).
        max_file_bytes: Largest file a command may write (``RLIMIT_FSIZE``).
        max_output_bytes: Bytes kept per output stream; past it the command is stopped
            and the result is flagged ``truncated``.
        tmp_bytes: Size of the private ``/tmp`` (``bwrap`` only; ``/dev/shm`` has at
            most 64 MiB of it).
        tmp_files: Files and folders each of ``/tmp`` and ``/dev/shm`` may hold
            (``bwrap`` only, and only when loopwright runs as root: an empty file takes
            no byte of ``tmp_bytes`` but about 1 KiB of kernel memory). Past it, making
            a file fails with "No space left on device". At most ``2**32``.
        disk_bytes: Total size of ``/workspace`` (``bwrap`` only, and only when
            loopwright runs as root: a size-limited tmpfs, held in memory, of at most
            one file or folder per 4 KiB; elsewhere a note is logged and only
            ``max_file_bytes`` per file applies).
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    cpu_seconds: int | None = Field(default=120, gt=0)
    memory_bytes: int | None = Field(default=1 * GiB, gt=0)
    memory_total_bytes: int | None = Field(default=2 * GiB, gt=0)
    max_processes: int | None = Field(default=256, gt=0)
    max_file_bytes: int | None = Field(default=256 * MiB, gt=0)
    max_output_bytes: int = Field(default=1 * MiB, gt=0)
    tmp_bytes: int = Field(default=256 * MiB, gt=0)
    tmp_files: int = Field(default=65536, gt=0, le=2**32)
    disk_bytes: int | None = Field(default=1 * GiB, gt=0)


class SandboxError(LoopwrightError):
    """A sandbox could not do what was asked (start, run a command, move a file)."""


class SandboxUnavailableError(SandboxError, ConfigurationError):
    """The chosen sandbox backend cannot run on this machine; the message names the fix."""


class ExecTimeoutError(SandboxError, TimeoutError):
    """A command ran past its timeout and was killed, with every process it started.

    Attributes:
        timeout: The timeout in seconds.
        result: What the command had written before it was killed.
    """

    def __init__(self, message: str, *, timeout: float, result: ExecResult) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.result = result
