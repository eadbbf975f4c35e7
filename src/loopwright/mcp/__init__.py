"""MCP both ways: any MCP server's tools as loopwright tools, loopwright's tools served.

Needs the ``mcp`` extra (``pip install 'loopwright[mcp]'``), the official MCP Python SDK,
imported only when a server is used. See :func:`mcp_server` (client) and
:func:`serve_mcp` (server).
"""

from loopwright.mcp._agent import MCPAgent, with_mcp
from loopwright.mcp._client import MCPServer, mcp_server
from loopwright.mcp._connection import MCPServerError
from loopwright.mcp._serve import mcp_app, serve_mcp, served_tools

__all__ = [
    "MCPAgent",
    "MCPServer",
    "MCPServerError",
    "mcp_app",
    "mcp_server",
    "serve_mcp",
    "served_tools",
    "with_mcp",
]
