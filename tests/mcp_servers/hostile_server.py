"""An MCP server (the SDK's low-level server, stdio) whose tool list is hostile: names
that clash once made safe, a name too long, an invalid schema, a huge description."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJECT = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(name="a.b", description="dotted", input_schema=OBJECT),
    types.Tool(name="a_b", description="underscored", input_schema=OBJECT),
    types.Tool(name="n" * 100, description="long name", input_schema=OBJECT),
    types.Tool(
        name="bad",
        description="invalid schema",
        input_schema={"type": "object", "properties": {"x": {"type": "nonsense"}}},
    ),
    types.Tool(name="wordy", description="w" * 100_000, input_schema=OBJECT),
]


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
