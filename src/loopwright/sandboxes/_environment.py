"""``SandboxEnvironment``: the interface every sandbox backend implements."""

from __future__ import annotations

import base64
import binascii
import math
import posixpath
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Self, overload

from .._errors import ConfigurationError
from ._record import report
from ._types import ExecResult, ExecTimeoutError, SandboxError, SandboxLimits

__all__ = [
    "FILE_TIMEOUT",
    "READ_CHECKS",
    "WRITE_SCRIPT",
    "SandboxEnvironment",
    "check_command",
    "check_text",
    "file_error",
]

FILE_TIMEOUT = 30.0
"""Seconds a file operation may take (or ``limits.timeout`` when shorter)."""

READ_CHECKS = (
    'if [ -d "$1" ]; then echo "$1: Is a directory" >&2; exit 1; fi; '
    'if [ ! -e "$1" ] || [ ! -r "$1" ]; then exec cat -- "$1"; fi; '  # (cat says why)
    'if [ ! -f "$1" ]; then echo "$1: not a regular file" >&2; exit 1; fi; '
)
"""The start of ``sh -c SCRIPT sh PATH N`` scripts reading the first ``N`` bytes of a
regular file: a folder, a device, a FIFO or a socket is refused (reading ``/dev/zero``
or a FIFO never ends), a missing or unreadable file fails with ``cat``'s message."""

WRITE_SCRIPT = (
    'if [ -e "$1" ] && [ ! -f "$1" ] && [ ! -d "$1" ]; then '
    'echo "$1: not a regular file" >&2; exit 1; fi; '  # (writing to a FIFO would block)
    'd="${1%/*}"; mkdir -p -- "${d:-/}" && cat > "$1"'
)
"""``sh -c WRITE_SCRIPT sh PATH``: write standard input to a regular file (``PATH``
absolute; its folder is cut from it, not taken from ``$(dirname)``, which drops the
newlines a folder's name may end with)."""


class SandboxEnvironment(ABC):
    """A place to run untrusted commands and keep their files.

    Use :meth:`exec`, :meth:`read_file` and :meth:`write_file`; paths that are not
    absolute are relative to :attr:`workdir`. Each operation is recorded in the current
    transcript as a ``SandboxEvent``.

    Writing a backend (docker, podman, a remote service): subclass this, implement
    :meth:`create`, :meth:`_exec` and :meth:`_cleanup`, and register the class under
    the ``loopwright.sandboxes`` entry point group (or call :func:`register_sandbox`);
    ``use_sandbox("<name>")`` then finds it. :meth:`_read_bytes` and
    :meth:`_write_bytes` have portable defaults on top of :meth:`_exec` (``base64`` and
    ``sh``) that a backend may replace with faster ones.

    Attributes:
        name: The backend's registered name.
        isolated: Whether commands are isolated from the host (``False`` for ``local``).
        workdir: The private writable folder commands start in, as commands see it.
        python: The Python interpreter commands should use.
        limits: The limits every command runs under.
    """

    name: ClassVar[str] = ""
    isolated: ClassVar[bool] = True
    workdir: str = "/workspace"
    python: str = "python3"
    limits: SandboxLimits
    _closed: bool = False

    # --- what a backend implements -----------------------------------------------------
    @classmethod
    @abstractmethod
    async def create(cls, *, limits: SandboxLimits | None = None, **options: Any) -> Self:
        """Start a fresh sandbox.

        Args:
            limits: Limits for every command (the defaults of :class:`SandboxLimits`
                when ``None``).
            **options: Backend-specific options.

        Raises:
            SandboxUnavailableError: The backend cannot run here; the message names the
                fix.
        """

    @abstractmethod
    async def _exec(
        self,
        cmd: list[str],
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
    ) -> ExecResult:
        """Run a command (the backend's part of :meth:`exec`).

        ``cmd`` and ``env`` are checked, ``cwd`` is absolute, ``timeout`` is set. Apply
        ``self.limits``; on timeout kill everything the command started and raise
        :class:`ExecTimeoutError`.
        """

    @abstractmethod
    async def _cleanup(self) -> None:
        """Stop whatever still runs and delete the sandbox's files (called once)."""

    # --- what users call ------------------------------------------------------------
    async def cleanup(self) -> None:
        """Stop every command still running and delete the sandbox's files.

        Safe to call more than once. After it, the sandbox cannot be used.
        """
        if self._closed:
            return
        self._closed = True
        await self._cleanup()

    async def exec(
        self,
        cmd: Sequence[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run a command in the sandbox.

        Args:
            cmd: The program and its arguments (no shell: use ``["bash", "-c", s]``).
            input: Standard input (``None``: none).
            cwd: The folder to start in (relative to :attr:`workdir`).
            env: Variables added to the sandbox's small environment.
            timeout: Wall-clock seconds (default ``limits.timeout``).

        Returns:
            The exit status and the output, capped per stream at
            ``limits.max_output_bytes`` (``truncated`` says when it was).

        Raises:
            ExecTimeoutError: The command ran past the timeout; it and every process it
                started were killed. The error carries the output so far.
            SandboxError: The command could not be started, or the sandbox was cleaned
                up.
            ConfigurationError: ``cmd``, ``env`` or ``timeout`` is malformed, or the
                command line is longer than the system takes (an argument or variable
                over 128 KiB: put long text in a file or on ``input``).
        """
        self._check_open()
        check_command(cmd, env)
        if isinstance(cwd, str):
            check_text(cwd, "a working folder")
        if isinstance(input, str):
            check_text(input, "the input", nul=True)
        if timeout is not None:  # (a command always ends: no NaN, inf, nor 10**400)
            timeout = _seconds(timeout)
        data = input.encode("utf-8") if isinstance(input, str) else input
        started = time.monotonic()
        try:
            result = await self._exec(
                list(cmd),
                input=data,
                cwd=self.resolve(cwd or "."),
                env=dict(env or {}),
                timeout=timeout if timeout is not None else self.limits.timeout,
            )
        except ExecTimeoutError as e:
            report("exec", started, cmd=list(cmd), input=data, result=e.result, note=str(e))
            raise
        report("exec", started, cmd=list(cmd), input=data, result=result)
        return result

    def resolve(self, path: str) -> str:
        """``path`` as an absolute path inside the sandbox (relative to :attr:`workdir`)."""
        return posixpath.normpath(posixpath.join(self.workdir, path))

    @overload
    async def read_file(
        self, path: str, text: Literal[True] = True, *, max_bytes: int | None = None
    ) -> str: ...

    @overload
    async def read_file(
        self, path: str, text: Literal[False], *, max_bytes: int | None = None
    ) -> bytes: ...

    async def read_file(
        self, path: str, text: bool = True, *, max_bytes: int | None = None
    ) -> str | bytes:
        """Read a regular file of the sandbox, at most ``max_bytes`` of it.

        The host holds at most ``max_bytes`` whatever the file is, and the read ends
        within :data:`FILE_TIMEOUT` seconds; devices, FIFOs and sockets are refused.

        Args:
            path: The file (relative to :attr:`workdir`).
            text: Decode it as UTF-8 (``False``: return the bytes).
            max_bytes: The largest file to read (default: ``limits.max_file_bytes``, or
                ``limits.max_output_bytes`` when that is off); a larger one is an error.

        Raises:
            FileNotFoundError: There is no such file.
            IsADirectoryError: ``path`` is a folder.
            PermissionError: The sandbox may not read it.
            UnicodeDecodeError: With ``text=True``, the file is not UTF-8.
            SandboxError: It could not be read for another reason (it is larger than
                ``max_bytes``, not a regular file, or took too long).
            ConfigurationError: ``path`` holds a NUL byte or a lone surrogate.
        """
        self._check_open()
        check_text(path, "a path")
        if max_bytes is not None and not (isinstance(max_bytes, int) and max_bytes > 0):
            raise ConfigurationError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        cap = max_bytes or self.limits.max_file_bytes or self.limits.max_output_bytes
        started = time.monotonic()
        full = self.resolve(path)
        try:
            data = await self._read_bytes(full, cap)
        except ExecTimeoutError as e:
            raise SandboxError(f"reading {full} took more than {e.timeout:g} seconds") from None
        if len(data) > cap:
            what = f"{cap} bytes" if max_bytes else f"the file size limit ({cap} bytes)"
            raise SandboxError(
                f"{full} is larger than {what}; read parts of it with a command "
                "(head, tail, sed -n, grep)"
            )
        report("read_file", started, file=full, output=data)
        return data.decode("utf-8") if text else data

    async def write_file(self, path: str, contents: str | bytes) -> None:
        """Write a file of the sandbox, creating its parent folders.

        Args:
            path: The file (relative to :attr:`workdir`).
            contents: Text (written as UTF-8) or bytes.

        Raises:
            PermissionError: The sandbox may not write there (e.g. outside its
                writable folders).
            IsADirectoryError: ``path`` is a folder.
            SandboxError: It could not be written for another reason (e.g. larger than
                ``limits.max_file_bytes``: refused before the file is touched).
            ConfigurationError: ``path`` holds a NUL byte or a lone surrogate, or the
                text of ``contents`` a lone surrogate (it has no UTF-8 form).
        """
        self._check_open()
        check_text(path, "a path")
        if not isinstance(contents, str | bytes):
            raise ConfigurationError(f"contents must be str or bytes, got {type(contents)}")
        if isinstance(contents, str):
            check_text(contents, "the contents", nul=True)
        started = time.monotonic()
        full = self.resolve(path)
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        limit = self.limits.max_file_bytes
        if limit is not None and len(data) > limit:  # (refused before the file is touched)
            raise SandboxError(f"{full} would be larger than the file size limit ({limit} bytes)")
        try:
            await self._write_bytes(full, data)
        except ExecTimeoutError as e:
            raise SandboxError(f"writing {full} took more than {e.timeout:g} seconds") from None
        report("write_file", started, file=full, input=data)

    def file_timeout(self) -> float:
        """Seconds a file operation may take: :data:`FILE_TIMEOUT`, or ``limits.timeout``
        when shorter."""
        return min(FILE_TIMEOUT, self.limits.timeout)

    # --- portable defaults a backend may replace ------------------------------------
    async def _read_bytes(self, path: str, max_bytes: int) -> bytes:
        """Read ``path`` (absolute), a regular file, by running ``head`` and ``base64`` in
        the sandbox: at most ``max_bytes + 1`` bytes (one more says it is larger)."""
        result = await self._exec(
            [
                "sh",
                "-c",
                READ_CHECKS + 'head -c "$2" -- "$1" | base64',
                "sh",
                path,
                str(max_bytes + 1),
            ],
            input=None,
            cwd=self.workdir,
            env={},
            timeout=self.file_timeout(),
        )
        if not result.success:
            raise file_error(path, result.stderr, reading=True)
        if result.truncated:
            raise SandboxError(
                f"{path} is too large to read through the sandbox's output cap "
                f"({self.limits.max_output_bytes} bytes); read it in parts with exec()"
            )
        try:
            return base64.b64decode(result.stdout)
        except binascii.Error as e:
            raise SandboxError(f"could not decode {path} as read from the sandbox: {e}") from e

    async def _write_bytes(self, path: str, data: bytes) -> None:
        """Write ``path`` (absolute) by running ``sh`` in the sandbox."""
        result = await self._exec(
            ["sh", "-c", WRITE_SCRIPT, "sh", path],
            input=data,
            cwd=self.workdir,
            env={},
            timeout=self.file_timeout(),
        )
        if not result.success:
            raise file_error(path, result.stderr, reading=False, returncode=result.returncode)

    # --- helpers --------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("this sandbox was cleaned up; start a new one with use_sandbox()")


def file_error(path: str, stderr: str, *, reading: bool, returncode: int = 1) -> Exception:
    """The Python exception matching a failed file operation's message (``cat``/``sh``'s,
    or an ``OSError``'s ``strerror``). Made from the message alone, so its ``str()`` reads
    well for a model (an ``errno`` would prefix it with ``[Errno n]``)."""
    message = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    verb = "read" if reading else "write"
    if "No such file or directory" in message:
        return FileNotFoundError(f"No such file: {path}")
    if "Is a directory" in message:
        return IsADirectoryError(f"{path} is a folder, not a file")
    if "not a regular file" in message:
        return SandboxError(
            f"{path} is not a regular file (a device, FIFO or socket); it cannot be used as one"
        )
    if "Not a directory" in message:
        # (a FileNotFoundError: what every file tool reports to the model as such)
        return FileNotFoundError(f"A parent folder of {path} is a file")
    denied = ("Permission denied", "Read-only file system", "Operation not permitted")
    if any(d in message for d in denied) or (not reading and "Directory nonexistent" in message):
        where = "" if reading else " (only the working folder and /tmp are writable)"
        return PermissionError(f"The sandbox may not {verb} {path}{where}")
    if returncode in (-25, 128 + 25) or "File size limit" in message:  # SIGXFSZ
        return SandboxError(f"{path} would be larger than the sandbox's file size limit")
    reason = message or f"exit status {returncode}"
    return SandboxError(f"could not {verb} {path} in the sandbox: {reason}")


def check_command(cmd: Sequence[str], env: Mapping[str, str] | None) -> None:
    """Raise :class:`ConfigurationError` unless ``cmd`` and ``env`` are well formed."""
    if isinstance(cmd, str) or not cmd or not all(isinstance(c, str) for c in cmd):
        raise ConfigurationError(
            f"cmd must be a non-empty list of strings (e.g. ['bash', '-c', 'ls']), got {cmd!r}"
        )
    for c in cmd:
        check_text(c, "a command")
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not key or "=" in key or not isinstance(value, str):
            raise ConfigurationError(f"bad environment variable {key!r}={value!r}")
        check_text(key, "an environment variable")
        check_text(value, "an environment variable")


def check_text(text: str, what: str, *, nul: bool = False) -> None:
    """Raise :class:`ConfigurationError` unless ``text`` can reach the sandbox: it has a
    UTF-8 form (no lone surrogate such as ``\\ud800``) and, unless ``nul``, no NUL byte
    (a command line, a path or a variable cannot hold one). The message names the
    problem for a model to fix."""
    if not nul and "\0" in text:
        raise ConfigurationError(f"{what} cannot hold a NUL character (\\0)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ConfigurationError(
            f"{what} cannot hold a lone surrogate ({text[e.start]!r} at position {e.start}): "
            "it is not a character and has no UTF-8 form"
        ) from None


def _seconds(timeout: float) -> float:
    """``timeout`` as a positive, finite number of seconds (else a ConfigurationError)."""
    try:
        seconds = float(timeout)
    except (OverflowError, TypeError, ValueError):
        seconds = math.nan
    if not 0 < seconds < math.inf:  # (NaN is not > 0 either)
        raise ConfigurationError(
            f"timeout must be positive and finite (seconds), got {str(timeout)[:40]}"
        )
    return seconds
