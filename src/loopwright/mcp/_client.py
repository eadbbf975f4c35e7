"""``mcp_server()``: an MCP server's tools as loopwright tools, on a connection that survives.

- The server is started (stdio) or reached (Streamable HTTP) on first need: the first
  :meth:`MCPServer.tools` or call. ``async with server:`` stops it when the block ends
  (also on cancellation, a time limit or Ctrl-C: the SDK stops a stdio server's whole
  process tree, in a shielded shutdown); :meth:`MCPServer.aclose` does it by hand.
- Each call has a timeout. A call that runs out of it is an error for the model; the
  server is then pinged, and restarted when it does not answer.
- A server that dies or closes its stream fails the calls in flight (an error for the
  model) and the next call reconnects: up to ``retries`` more attempts, waiting
  ``backoff`` seconds and twice that each time.
- A ``notifications/tools/list_changed`` marks the tool list stale: the next
  :meth:`MCPServer.tools` lists it again.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loopwright._patterns import PatternUnchecked
from loopwright.mcp._connection import (
    Connection,
    MCPServerError,
    Transport,
    check_names,
    open_connection,
)
from loopwright.mcp._results import clean, resource_text, result_text
from loopwright.model import ToolInfo
from loopwright.tools import Tool, ToolDefinitionError, ToolError

if TYPE_CHECKING:
    import mcp_types

__all__ = ["MCPServer", "mcp_server"]

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
_PING_TIMEOUT = 5.0
_MAX_DESCRIPTION = 8000  # characters of a tool's description the model is shown
_MAX_SCHEMA = 100_000  # characters of a tool's input schema (JSON); a larger one is left out


class MCPServer:
    """A handle on one MCP server; make it with :func:`mcp_server`."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        prefix: str | None,
        include: Sequence[str] | None,
        exclude: Sequence[str] | None,
        timeout: float,
        startup_timeout: float,
        retries: int,
        backoff: float,
    ) -> None:
        for what, value in (("timeout", timeout), ("startup_timeout", startup_timeout)):
            if not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"mcp_server: {what} must be > 0 seconds, got {value!r}")
        if not (isinstance(retries, int) and retries >= 0) or backoff < 0:
            raise ValueError("mcp_server: retries and backoff must be >= 0")
        self.name = name
        self.transport = transport
        self.prefix = prefix or ""
        self.include = check_names(include, "include")
        self.exclude = check_names(exclude, "exclude") or frozenset()
        self.timeout = float(timeout)
        self.startup_timeout = float(startup_timeout)
        self.retries = retries
        self.backoff = backoff
        self.connects = 0
        """How many connections were opened (1 + the reconnections)."""
        self._conn: Connection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._tools: dict[str, Tool[..., Any]] = {}
        self._defs: dict[str, mcp_types.Tool] = {}
        self._stale = True
        self._users = 0  # async with blocks and runs using it; the last one stops it

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {clean(self.transport.describe(), 200)!r})"

    async def __aenter__(self) -> MCPServer:
        self._users += 1
        try:
            await self._session()
        except BaseException:
            await self.release()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()

    async def release(self) -> None:
        """One user (an ``async with`` block, a run of :func:`with_mcp`) is done: the
        last one stops the server."""
        self._users = max(0, self._users - 1)
        if self._users == 0:
            await self.aclose()

    @property
    def tools_changed(self) -> bool:
        """Whether the server said its tools changed since they were last listed."""
        return self._stale

    async def aclose(self) -> None:
        """Stop the server (stdio) or close the session (HTTP); the next use reconnects."""
        conn, self._conn = self._conn, None
        if conn is not None and self._loop is asyncio.get_running_loop():
            await conn.stop()

    # -- the connection ---------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self._stale = True

    async def _session(self) -> Connection:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (another run_sync): start anew
            self._loop, self._lock, self._conn = loop, asyncio.Lock(), None
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        assert self._lock is not None
        async with self._lock:
            conn = self._conn
            if conn is not None and conn.alive:
                return conn
            if conn is not None:
                await conn.stop()
            self._conn = await self._connect()
            self._stale = True
            return self._conn

    async def _connect(self) -> Connection:
        what = f"MCP server {self.name!r}"
        for attempt in range(self.retries + 1):
            try:
                conn = await open_connection(
                    self.transport, self._on_message, self.startup_timeout, what
                )
            except MCPServerError:
                if attempt == self.retries:
                    raise
                await asyncio.sleep(self.backoff * 2**attempt)
            else:
                self.connects += 1
                return conn
        raise AssertionError("unreachable")  # pragma: no cover

    async def _drop(self, conn: Connection) -> None:
        if self._conn is conn:
            self._conn = None
        await conn.stop()

    async def _request(
        self, what: str, fn: str, *args: Any, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        """Run one request on the session: a dead server is an :class:`MCPServerError`
        (and the next request reconnects), so is an answer the SDK refuses (the
        connection stays); a timeout is a ``TimeoutError``."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        conn = await self._session()
        session = conn.session
        if session is None:  # it ended since: the next request reconnects
            await self._drop(conn)
            raise MCPServerError(f"MCP server {self.name!r}: {what} failed: {conn.gone_message()}")
        try:
            # the SDK checks structured content against the tool's output schema, the
            # server's patterns included: matched in bounded time, off the event loop
            # when slow (_session.py), a PatternUnchecked when they cannot be
            async with asyncio.timeout(timeout or self.timeout):
                return await conn.race(getattr(session, fn)(*args, **kwargs))
        except MCPServerError as ex:
            await self._drop(conn)
            raise MCPServerError(f"MCP server {self.name!r}: {what} failed: {ex}") from None
        except MCPError as ex:
            # the SDK's "connection closed" is -32000, JSON-RPC's first code for a
            # server's own errors, which servers use: gone only if it answers no ping
            if ex.code != CONNECTION_CLOSED or await self._answers_ping(conn):
                raise
            await self._drop(conn)
            raise MCPServerError(
                f"MCP server {self.name!r}: {what} failed: {conn.gone_message()}"
            ) from None
        except (ValidationError, RuntimeError, PatternUnchecked) as ex:
            # the SDK refused the answer: a result of the wrong shape, content of an
            # unknown type, structured content its output schema refuses (or a schema
            # that cannot be used: a RecursionError is a RuntimeError; a pattern not
            # matched in time), a result kind this client did not ask for. The
            # server's fault, not this process's.
            why = clean(self.transport.redact(str(ex)[:1000]))
            if isinstance(ex, PatternUnchecked):
                why = f"it could not be checked against its output schema's pattern: {why}"
            raise MCPServerError(
                f"MCP server {self.name!r}: {what} got an invalid answer: {why}"
            ) from None
        except TimeoutError:
            if not await self._answers_ping(conn):
                await self._drop(conn)
                raise TimeoutError(
                    f"{what} got no answer within {timeout or self.timeout:g} s and the server "
                    "did not answer a ping either; it was stopped, and the next call restarts it"
                ) from None
            raise TimeoutError(
                f"{what} got no answer within {timeout or self.timeout:g} s"
            ) from None

    async def _answers_ping(self, conn: Connection) -> bool:
        session = conn.session
        if session is None:
            return False
        try:
            async with asyncio.timeout(min(_PING_TIMEOUT, self.timeout)):
                await conn.race(session.send_ping())
        except Exception:
            return False
        return True

    # -- tools --------------------------------------------------------------------

    async def tools(self) -> list[Tool[..., Any]]:
        """The server's tools (after ``include``/``exclude``) as loopwright tools, named
        ``prefix + name`` (characters a tool name cannot hold become ``_``), with the
        description and input schema the server declares. Listed again when the server
        said they changed; a tool whose definition is unchanged is the same object.

        Raises:
            MCPServerError: The server could not be started or reached.
            TimeoutError: It did not answer within ``timeout`` seconds.
        """
        if self._stale or self._conn is None or not self._conn.alive:
            self._stale = False
            from mcp_types import PaginatedRequestParams

            listed: list[mcp_types.Tool] = []
            params: PaginatedRequestParams | None = None
            try:
                for _ in range(100):  # a bound on pages: a server could loop its cursors
                    page = await self._request("tools/list", "list_tools", params=params)
                    listed.extend(page.tools)
                    if not page.next_cursor:
                        break
                    params = PaginatedRequestParams(cursor=page.next_cursor)
            except BaseException:
                self._stale = True  # not listed: the next call lists them again
                raise
            self._update(listed)
        return list(self._tools.values())

    def _update(self, listed: Sequence[mcp_types.Tool]) -> None:
        tools: dict[str, Tool[..., Any]] = {}
        defs: dict[str, mcp_types.Tool] = {}
        used: set[str] = set()
        for t in listed:
            if (self.include is not None and t.name not in self.include) or t.name in self.exclude:
                continue
            if t.name in defs:
                continue  # a name listed twice: the first one
            old = self._tools.get(t.name)
            if old is not None and self._defs.get(t.name) == t and old.name not in used:
                made: Tool[..., Any] | None = old
            else:
                made = self._tool(t, used)
            if made is not None:
                tools[t.name], defs[t.name] = made, t
                used.add(made.name)
        self._tools, self._defs = tools, defs

    def _tool(self, t: mcp_types.Tool, used: set[str]) -> Tool[..., Any] | None:
        """``t`` as a loopwright tool; ``None`` (and a warning) when its schema is unusable."""
        name = _UNSAFE_NAME.sub("_", self.prefix + t.name)[:64] or "tool"
        n = 2
        while name in used:  # two names made the same by the substitution
            name = f"{name[:60]}_{n}"
            n += 1
        schema = dict(t.input_schema) if t.input_schema else {}
        schema.setdefault("type", "object")
        description = t.description or t.title or ""
        if len(description) > _MAX_DESCRIPTION:
            description = description[:_MAX_DESCRIPTION] + " [...]"
        info = ToolInfo(name=name, description=description, parameters=schema)
        server, remote = self, t.name

        async def call(**arguments: Any) -> str:
            return await server._call_for_model(remote, arguments)

        try:
            size = len(json.dumps(schema))  # JSON as the server sent it: it dumps
            if size > _MAX_SCHEMA:  # sent to the model at every step, and stored
                raise ToolDefinitionError(
                    f"its input schema is {size:,} characters of JSON (at most {_MAX_SCHEMA:,})"
                )
            return Tool.from_info(info, call, parallel=True)
        except ToolDefinitionError as ex:
            warnings.warn(
                f"MCP server {self.name!r}: tool {clean(t.name, 100)!r} is left out: "
                f"{clean(self.transport.redact(str(ex)[:1000]))}",
                UserWarning,
                stacklevel=4,
            )
            return None

    async def _call_for_model(self, name: str, arguments: dict[str, Any]) -> str:
        from loopwright.transcripts import current_transcript

        # nested in the call's tool event: which server answered (the run store keeps it)
        t = current_transcript()
        if t is not None:
            t.info({"mcp_server": self.name, "tool": name}, source="mcp")
        try:
            result = await self.call(name, arguments)
        except (MCPServerError, TimeoutError) as ex:
            raise ToolError(f"MCP tool {name!r} ({self.name}): {ex}") from None
        except Exception as ex:
            from mcp import MCPError

            if isinstance(ex, MCPError):  # a JSON-RPC error: unknown tool, bad arguments
                why = clean(self.transport.redact(ex.message))
                raise ToolError(f"MCP tool {name!r} ({self.name}): {why}") from None
            raise
        text = result_text(result)
        if result.is_error:
            raise ToolError(text or f"MCP tool {name!r} failed without a message.")
        return text

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> mcp_types.CallToolResult:
        """Call tool ``name`` (the server's name for it) and return the SDK's result.

        Raises:
            MCPServerError: The server could not be started or went away, or its
                answer is not a valid result.
            TimeoutError: No answer within ``timeout`` (default: the server's).
            mcp.MCPError: The server answered with a JSON-RPC error.
        """
        return await self._request(  # type: ignore[no-any-return]
            f"tools/call {name!r}", "call_tool", name, dict(arguments or {}), timeout=timeout
        )

    # -- prompts and resources ----------------------------------------------------

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        """The server's prompts (first page)."""
        return list((await self._request("prompts/list", "list_prompts")).prompts)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> mcp_types.GetPromptResult:
        """Prompt ``name`` filled with ``arguments``."""
        return await self._request(  # type: ignore[no-any-return]
            f"prompts/get {name!r}", "get_prompt", name, dict(arguments or {})
        )

    async def list_resources(self) -> list[mcp_types.Resource]:
        """The server's resources (first page)."""
        return list((await self._request("resources/list", "list_resources")).resources)

    async def read_resource(self, uri: str) -> str:
        """The resource at ``uri`` as text (binary parts as a note of their size)."""
        result = await self._request(f"resources/read {uri!r}", "read_resource", uri)
        return resource_text(result.contents)


def mcp_server(
    command: str | Sequence[str] | None = None,
    *,
    url: str | None = None,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    prefix: str | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    timeout: float = 60.0,
    startup_timeout: float = 30.0,
    retries: int = 3,
    backoff: float = 0.5,
) -> MCPServer:
    """An MCP server whose tools an agent can use (needs the ``mcp`` extra).

    Give ``command`` for a stdio server (a list ``[program, *args]`` or one program
    name) or ``url`` for a Streamable HTTP one. Nothing starts until the server is
    needed; use ``async with`` (or :meth:`MCPServer.aclose`) to stop it::

        async with lw.mcp_server(["python", "server.py"], prefix="fs_") as fs:
            agent = lw.react(tools=[*await fs.tools(), lw.bash()])
            await lw.run(agent, "...")

    Args:
        command: The program and its arguments (stdio).
        url: The server's endpoint (Streamable HTTP).
        name: The server's name in messages (default: the program or the URL's host).
        env: Environment variables for a stdio server, over a minimal safe set (``PATH``,
            ``HOME``...): the rest of this process's environment is not passed on.
        cwd: The working folder of a stdio server.
        headers: HTTP headers (e.g. authorization) for a Streamable HTTP server.
        prefix: Put before every tool name, to avoid clashes.
        include: Only these tools (the server's names).
        exclude: Not these tools.
        timeout: Seconds a call may take.
        startup_timeout: Seconds the server may take to start and initialize.
        retries: Further attempts to start or reach the server before failing.
        backoff: Seconds before the first retry; doubled for each next one.
    """
    if (command is None) == (url is None):
        raise ValueError("mcp_server: give either command (a stdio server) or url (HTTP)")
    if url is not None:
        from urllib.parse import urlsplit

        transport = Transport(url=url, headers=dict(headers or {}))
        default = urlsplit(url).hostname or "mcp"  # never its user or password
    else:
        argv = [command] if isinstance(command, str) else list(command or [])
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"mcp_server: command must be a program and its arguments: {argv!r}")
        transport = Transport(command=argv[0], args=tuple(argv[1:]), env=env, cwd=cwd)
        default = argv[0].rsplit("/", 1)[-1]
    return MCPServer(
        name or default,
        transport,
        prefix=prefix,
        include=include,
        exclude=exclude,
        timeout=timeout,
        startup_timeout=startup_timeout,
        retries=retries,
        backoff=backoff,
    )
