"""Run one command as an asyncio subprocess under a deadline and output caps.

Shared by the backends: they build the command line (and say how to kill what it
started); this module feeds stdin, collects capped output, enforces the wall-clock
timeout and makes sure no process is left behind on any path (done, timeout, output
overflow, cancellation).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from ._types import ExecResult, ExecTimeoutError, SandboxError

__all__ = ["RawResult", "descendants", "kill_group", "run_process", "tagged"]

_DRAIN_GRACE = 5.0
"""Seconds to wait for the output pipes to close once the command has exited."""


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def proc_stats() -> Iterator[tuple[int, list[bytes]]]:
    """``(pid, fields)`` of every process in ``/proc`` (Linux only; nothing elsewhere):
    the fields of ``/proc/<pid>/stat`` after the command name (state, ppid, ...)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: fields follow the last ')'
        yield int(entry), stat[stat.rfind(b")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """The pids of every live descendant of ``pid``, read from ``/proc`` (Linux only).

    Returns an empty list where ``/proc`` is unavailable.
    """
    children: dict[int, list[int]] = {}
    for child, fields in proc_stats():
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tagged(variable: bytes) -> list[int]:
    """The pids of the processes whose environment holds ``variable`` (``b"NAME=value"``),
    read from ``/proc/<pid>/environ`` (Linux only; processes this user may inspect).

    A process that left the command's session and process tree (a daemon: fork,
    ``setsid``, fork) still carries the environment it was started with.
    """
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read(1 << 20)
        except OSError:
            continue
        if variable in environ.split(b"\0"):
            found.append(int(entry))
    return found


@dataclass
class RawResult:
    """A finished command's exit status and output bytes."""

    returncode: int
    stdout: bytes
    stderr: bytes
    truncated: bool

    def result(self) -> ExecResult:
        """As an :class:`ExecResult` (output decoded as UTF-8, bad bytes replaced)."""
        return ExecResult(
            success=self.returncode == 0,
            returncode=self.returncode,
            stdout=self.stdout.decode("utf-8", errors="replace"),
            stderr=self.stderr.decode("utf-8", errors="replace"),
            truncated=self.truncated,
        )


class _Protocol(asyncio.SubprocessProtocol):
    """Collects capped output, and tells apart "the process exited" from "its pipes
    closed" (``Process.wait()`` waits for both, and a process that escaped the kill
    could hold a pipe open forever)."""

    def __init__(self, limit: int, kill_tree: Callable[[int], None]) -> None:
        loop = asyncio.get_running_loop()
        self.kill_tree = kill_tree
        self.pid: int | None = None
        self.limit = limit
        self.data: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.truncated = False
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: dict[int, asyncio.Future[None]] = {
            1: loop.create_future(),
            2: loop.create_future(),
        }

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # called before any output is delivered, so an overflow can always kill
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.pid = transport.get_pid()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        buf = self.data.get(fd)
        if buf is None or not data:
            return
        assert isinstance(data, bytes)
        room = self.limit - len(buf)
        if len(data) <= room:
            buf += data
            return
        buf += data[:room]  # the rest is dropped, and the command is stopped
        if not self.truncated:
            self.truncated = True
            assert self.pid is not None
            self.kill_tree(self.pid)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        fut = self.closed.get(fd)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def run_process(
    argv: Sequence[str],
    *,
    input: bytes | None,
    timeout: float,
    max_output_bytes: int,
    kill_tree: Callable[[int], None],
    after_exit: Callable[[int], None] | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    spawn_options: Mapping[str, Any] | None = None,
    label: str = "",
    running: set[int] | None = None,
) -> RawResult:
    """Run ``argv`` and return its exit status and capped output.

    Args:
        argv: The command line.
        input: Bytes for standard input (``None``: stdin is ``/dev/null``).
        timeout: Wall-clock seconds before the process tree is killed.
        max_output_bytes: Bytes kept per stream; past it the tree is killed and the
            result is flagged ``truncated``.
        kill_tree: Kills the process started as ``pid`` and everything it started.
        after_exit: Called with the pid once the command has exited, to clean up
            whatever it left running.
        cwd: The working folder of the started process.
        env: The environment of the started process.
        spawn_options: More keyword arguments for the process (e.g. ``user``).
        label: The command as the user gave it, for error messages.
        running: The pid is in this set while the command runs (so that a sandbox's
            cleanup can kill what is still running).

    Raises:
        ExecTimeoutError: The deadline passed; the error carries the output so far.
        ConfigurationError: The command line is longer than the system takes
            (``E2BIG``: an argument or variable over 128 KiB).
        SandboxError: The command could not be started.
    """
    loop = asyncio.get_running_loop()
    protocol = _Protocol(max_output_bytes, kill_tree)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            *argv,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            **dict(spawn_options or {}),
        )
    except OSError as e:
        if e.errno == errno.E2BIG:  # what the caller gave: a model's long heredoc...
            raise ConfigurationError(
                "the command line is too long for the system: one argument or "
                "environment variable may hold at most 128 KiB, all of them together "
                "about 2 MiB; write a long script or text to a file (write_file) and run "
                "the file, or pass the text on standard input"
            ) from None
        raise SandboxError(f"could not start {argv[0]!r}: {e}") from e
    pid = transport.get_pid()
    if running is not None:
        running.add(pid)
    if input is not None:
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        stdin.write(input)  # buffered by the transport, written as the command reads
        stdin.close()  # after the buffer is flushed; a command that exits early is fine
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
        except TimeoutError:
            timed_out = True
            kill_tree(pid)
            await protocol.exited
        if after_exit is not None:
            await asyncio.to_thread(after_exit, pid)  # (it may scan /proc)
        # the pipes close when the last process holding them is gone; one that escaped
        # (only possible without isolation) is not waited for past the grace period
        await asyncio.wait(protocol.closed.values(), timeout=_DRAIN_GRACE)
    finally:
        if transport.get_returncode() is None:  # cancelled or failed while running
            kill_tree(pid)
        if running is not None:
            running.discard(pid)
        transport.close()
    returncode = transport.get_returncode()
    assert returncode is not None
    raw = RawResult(
        returncode=returncode,
        stdout=bytes(protocol.data[1]),
        stderr=bytes(protocol.data[2]),
        truncated=protocol.truncated,
    )
    if timed_out:
        raise ExecTimeoutError(
            f"command timed out after {timeout:g} seconds and was killed, with every "
            f"process it started: {(label or ' '.join(argv))[:200]}",
            timeout=timeout,
            result=raw.result().model_copy(update={"success": False}),
        )
    return raw
