"""One connection to an MCP server: a task that owns the transport and the SDK session.

The SDK's transports and sessions are anyio context managers that must be entered and
left in one task, so each connection is a task of its own (started in an empty context:
it belongs to no run) that opens the transport, initializes the session, hands it over
and waits until it is told to stop or the server goes away. Calls run in the callers'
tasks on the session it handed over, and race the connection's end: a server that dies
fails the calls in flight at once instead of leaving them waiting.

When a stdio server's connection ends, the SDK has stopped the server (closed its
stdin, then stopped its process group if it did not end); what is left of its process
group (a process it started and left behind) is then killed.

A stdio server's stderr goes to a pipe read as it is written, whose end (the last 16,000
bytes; the rest is dropped) is quoted when the server cannot start or dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from loopwright._errors import LoopwrightError
from loopwright.mcp._results import clean

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["Connection", "MCPServerError", "Transport", "open_connection"]

T = TypeVar("T")

#: How long a stopping connection may take (the SDK closes stdin, waits, then kills).
STOP_TIMEOUT = 10.0
#: How much of a stdio server's stderr is kept, to quote when it fails (bytes).
TAIL_BYTES = 16_000


class MCPServerError(LoopwrightError):
    """An MCP server could not be started or reached, went away, or answered with
    something that is not a valid result."""


@dataclass(frozen=True, slots=True)
class Transport:
    """How to reach a server: a command (stdio) or a URL (Streamable HTTP)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)  # may hold secrets
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # authorization

    def describe(self) -> str:
        """The command line, or the URL without its credentials, query and fragment, for
        messages (header values are never shown)."""
        if self.url is not None:
            from loopwright.model._redact import scrub_secrets

            return str(scrub_secrets(self.url))
        import shlex

        return shlex.join([self.command or "", *self.args])

    def secrets(self) -> list[str]:
        """What reaching the server takes that is secret: the URL's credentials
        (its password, or its user when it has none) and query values, the header
        values, the values of a stdio server's variables named like a secret."""
        from loopwright.model._redact import credentials, secret_name

        found: list[str] = []
        if self.url is not None:
            from urllib.parse import parse_qsl, urlsplit

            found += credentials(None, self.url, self.headers)
            try:
                found += [v for _, v in parse_qsl(urlsplit(self.url).query)]
            except ValueError:
                pass
        found += [v for k, v in (self.env or {}).items() if secret_name(k)]
        return found

    def redact(self, text: str) -> str:
        """``text`` (an error's message, a server's stderr) without :meth:`secrets` and
        what looks like one (``model/_redact.py``)."""
        from loopwright.model._redact import redact

        return redact(text, self.secrets())


class Connection:
    """A live (or dead) connection; see the module's docstring."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.session: ClientSession | None = None
        self.ended = asyncio.Event()  # the task ended: the server is gone
        self.error: BaseException | None = None
        self._stop = asyncio.Event()
        self._stderr: _StderrTail | None = None
        self._group: int | None = None  # a stdio server's process group
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.ended.is_set()

    def stderr_tail(self) -> str:
        """The end of the server's stderr so far (stdio servers; "" otherwise)."""
        return self._stderr.text() if self._stderr is not None else ""

    async def race(self, call: Awaitable[T]) -> T:
        """Await ``call``, failing with :class:`MCPServerError` if the server goes away."""
        task = asyncio.ensure_future(call)
        ended = asyncio.ensure_future(self.ended.wait())
        try:
            await asyncio.wait({task, ended}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            ended.cancel()
        if task.done():
            return task.result()
        task.cancel()
        raise MCPServerError(self.gone_message())

    def gone_message(self) -> str:
        why = f" ({_describe(self.error)})" if self.error is not None else ""
        tail = self.stderr_tail()
        err = f"; its stderr ends with:\n{tail}" if tail else ""
        return self.transport.redact(f"the server went away{why}{err}")

    async def stop(self) -> None:
        """End the connection (the SDK stops a stdio server's whole process tree)."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
            except TimeoutError:
                task.cancel()  # the SDK's shutdown is bounded; this is a last resort
            except asyncio.CancelledError:
                task.cancel()
                raise

    async def _run(
        self,
        ready: asyncio.Future[None],
        on_message: Callable[[Any], Awaitable[None]],
        startup_timeout: float,
    ) -> None:
        from loopwright.mcp._session import session_class

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._open(stack))
                if self._stderr is not None:  # the server has it: this end is not needed
                    self._stderr.writer.close()
                    self._group = _group_of(self._stderr.holder())
                session = await stack.enter_async_context(
                    session_class()(read, write, message_handler=on_message)  # type: ignore[arg-type]
                )
                async with asyncio.timeout(startup_timeout):
                    await session.initialize()
                self.session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as ex:
            self.error = ex
            if not ready.done():
                ready.set_exception(ex if isinstance(ex, Exception) else MCPServerError(str(ex)))
            if not isinstance(ex, Exception):
                raise
        finally:
            self.ended.set()
            self.session = None
            if self._group is not None:  # what the server left running stops with it
                with contextlib.suppress(OSError):
                    os.killpg(self._group, signal.SIGKILL)
            if self._stderr is not None:  # the server is stopped: read the rest, close
                self._stderr.close()

    def _open(self, stack: AsyncExitStack) -> Any:
        t = self.transport
        if t.url is not None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers=dict(t.headers))
            stack.push_async_callback(http.aclose)
            return streamable_http_client(t.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert t.command is not None
        self._stderr = _StderrTail()
        # bytes that are not UTF-8 become U+FFFD: with "strict", the SDK's reader dies
        # on them and waits for the server to end, so calls wait for their timeout
        params = StdioServerParameters(
            command=t.command,
            args=list(t.args),
            env=dict(t.env or {}),
            cwd=t.cwd,
            encoding_error_handler="replace",
        )
        return stdio_client(params, errlog=self._stderr.writer)


class _StderrTail:
    """A stdio server's stderr: a pipe read as the server writes it, of which only the
    last ``TAIL_BYTES`` are kept (a server that logs for hours fills no disk, and never
    blocks on a full pipe)."""

    def __init__(self) -> None:
        read, write = os.pipe()
        os.set_blocking(read, False)
        self.writer: TextIO = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        self._fd: int | None = read
        self._kept = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read, self._read)

    def _read(self) -> None:
        for _ in range(64):  # at most 4 MiB a turn: the loop calls again
            if self._fd is None:
                return
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # every writer is gone
                self._stop_reading()
                return
            self._kept += data
            if len(self._kept) > 2 * TAIL_BYTES:
                del self._kept[:-TAIL_BYTES]

    def holder(self) -> int | None:
        """The child process of this one whose stderr is this pipe: the server (Linux;
        ``None`` elsewhere)."""
        if self._fd is None:
            return None
        link = f"pipe:[{os.fstat(self._fd).st_ino}]"
        me = os.getpid()
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return None
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
                if ppid == me and os.readlink(f"/proc/{pid}/fd/2") == link:
                    return pid
            except (OSError, IndexError, ValueError):
                continue
        return None

    def text(self) -> str:
        """The end of what the server wrote so far, stripped of control sequences."""
        self._read()
        return clean(self._kept[-TAIL_BYTES:].decode("utf-8", "replace").strip())

    def _stop_reading(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            if not self._loop.is_closed():
                self._loop.remove_reader(fd)
            os.close(fd)

    def close(self) -> None:
        """Read what is left and close the pipe (the text stays)."""
        self.writer.close()
        self._read()
        self._stop_reading()


def _group_of(pid: int | None) -> int | None:
    """The process group ``pid`` leads (the SDK starts a stdio server in a session of
    its own), never this process's."""
    try:
        if pid is not None and os.getpgid(pid) == pid != os.getpgrp():
            return pid
    except OSError:
        pass
    return None


def _leaf(ex: BaseException) -> BaseException:
    """An exception group's first leaf (the anyio task groups in the SDK wrap errors)."""
    while isinstance(ex, BaseExceptionGroup) and ex.exceptions:
        ex = ex.exceptions[0]
    return ex


def _describe(ex: BaseException) -> str:
    """An exception as one line, an exception group by its first leaf."""
    ex = _leaf(ex)
    text = str(ex) or type(ex).__name__
    return clean(f"{type(ex).__name__}: {text}" if str(ex) else text, 500)


async def open_connection(
    transport: Transport,
    on_message: Callable[[Any], Awaitable[None]],
    startup_timeout: float,
    what: str,
) -> Connection:
    """Start the server (stdio) or reach it (HTTP) and initialize a session.

    Raises:
        MCPServerError: It could not be started or reached, or did not initialize
            within ``startup_timeout`` seconds; the message names the command or URL
            and quotes the end of the server's stderr.
    """
    from loopwright.model._redact import learn_secrets

    learn_secrets(transport.secrets())  # the run store redacts them from every row
    conn = Connection(transport)
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    conn._task = asyncio.create_task(
        conn._run(ready, on_message, startup_timeout), context=contextvars.Context()
    )
    try:
        await ready
    except asyncio.CancelledError:
        await asyncio.shield(conn.stop())
        raise
    except Exception as ex:
        await conn.stop()
        kind = "be reached" if transport.url is not None else "start"
        if isinstance(_leaf(ex), TimeoutError):
            why = f"no answer to initialize within {startup_timeout:g} s"
        else:
            why = _describe(ex)
        tail = conn.stderr_tail()
        err = f"\nIts stderr ends with:\n{tail}" if tail else " (nothing on its stderr)"
        if transport.url is not None:
            err = ""
        message = (
            f"{what} could not {kind}: `{clean(transport.describe(), 500)}` failed with {why}."
        )
        raise MCPServerError(transport.redact(message + err)) from ex
    return conn


def check_names(names: Sequence[str] | None, what: str) -> frozenset[str] | None:
    """An include/exclude list of tool names, as a set."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be a list of tool names, got {names!r}")
    return frozenset(names)
