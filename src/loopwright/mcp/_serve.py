"""``serve_mcp()``: loopwright tools (and agents, each as one tool) as an MCP server.

The server is the SDK's low-level ``Server``: ``tools/list`` answers each tool's name,
description and JSON schema; ``tools/call`` runs the call through ``execute_tools``,
the path every model's call takes (the one argument binder, the tool's timeout, the
approval policy in force, output bounds), and a failure the model would be told about
is a result with ``isError``; any other exception (a bug) is a JSON-RPC internal error
naming only its type (its message could hold anything of this side's: a path, a
token), the traceback logged on this side. Served over stdio or Streamable HTTP (uvicorn).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from loopwright._errors import ConfigurationError
from loopwright.agents import as_tool
from loopwright.model import AssistantMessage, ToolCall
from loopwright.tools import DEFAULT_MAX_PARALLEL, Tool, execute_tools

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["mcp_app", "serve_mcp", "served_tools"]

_log = logging.getLogger("loopwright.mcp.serve")


def served_tools(items: Tool[..., Any] | Sequence[Any]) -> list[Tool[..., Any]]:
    """Tools as they are, agents (anything else callable) as tools (``lw.as_tool``).

    Raises:
        ConfigurationError: Something is neither, or two tools share a name.
    """
    found = [items] if isinstance(items, Tool) or not isinstance(items, Sequence) else items
    tools: list[Tool[..., Any]] = []
    for item in found:
        if isinstance(item, Tool):
            tools.append(item)
        elif callable(item) and not isinstance(item, type):
            tools.append(as_tool(item))
        else:
            raise ConfigurationError(f"serve_mcp: {item!r} is neither a Tool nor an agent")
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(f"serve_mcp: tool names must be unique; repeated: {dupes}")
    if not tools:
        raise ConfigurationError("serve_mcp: no tools to serve")
    return tools


def mcp_app(
    items: Tool[..., Any] | Sequence[Any],
    *,
    name: str = "loopwright",
    max_output: int = 0,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
) -> Server[Any]:
    """The SDK's low-level MCP ``Server`` serving ``items`` (tools, and agents as tools).

    ``max_output``: the most bytes of a result (``0``: no limit; the client's own
    agent bounds what its model reads). ``max_parallel``: the most calls running at
    once, whichever clients sent them (the SDK starts a task for each request, so a
    client could start thousands of agent runs); the others wait their turn.
    """
    import mcp_types as types
    from mcp.server.lowlevel import Server

    if not (isinstance(max_parallel, int) and max_parallel >= 1):
        raise ConfigurationError(f"serve_mcp: max_parallel must be >= 1, got {max_parallel!r}")
    running = asyncio.Semaphore(max_parallel)
    tools = served_tools(items)
    listed = types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=dict(t.info.parameters))
            for t in tools
        ]
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        from mcp import MCPError

        call = ToolCall(function=params.name, arguments=dict(params.arguments or {}))
        message = AssistantMessage(tool_calls=[call])
        try:
            async with running:
                [result] = await execute_tools(message, tools, max_output=max_output)
        except Exception as ex:
            # a bug in the tool: its message (a path, a token...) is this side's, not
            # the client's; the traceback goes to this server's log (its stderr)
            _log.exception("tool %r raised", params.name)
            raise MCPError(
                types.INTERNAL_ERROR,
                f"Tool {params.name!r} failed with an internal error ({type(ex).__name__}); "
                "the server's log has the details.",
            ) from None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)],
            is_error=result.error is not None,
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_mcp(
    items: Tool[..., Any] | Sequence[Any],
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    name: str = "loopwright",
    max_parallel: int = DEFAULT_MAX_PARALLEL,
) -> None:
    """Serve ``items`` (tools, and agents as tools) as an MCP server until cancelled.

    ``transport="stdio"`` reads requests from stdin and answers on stdout (what an MCP
    client that starts the server expects); ``"http"`` serves Streamable HTTP at
    ``http://host:port/path``. At most ``max_parallel`` calls run at once (see
    :func:`mcp_app`).
    """
    server = mcp_app(items, name=name, max_parallel=max_parallel)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            # stdout is the protocol's: a tool's print() goes to stderr instead
            with contextlib.redirect_stdout(sys.stderr):
                await server.run(read, write, server.create_initialization_options())
        return
    if transport != "http":
        raise ConfigurationError(f"serve_mcp: transport must be stdio or http, not {transport!r}")
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
