"""An MCP server (the SDK's low-level server, stdio) whose tools' input schemas hold
patterns that backtrack without end in Python's ``re`` (``^(a+)+$``, ``^(a|a)+$``), as
a ``pattern`` and as a ``patternProperties`` key, and a draft-04 schema whose
``patternProperties`` key is not a regular expression (draft 4's meta-schema does not
check those keys). A call that reaches it gets its arguments back as text."""

from __future__ import annotations

import json

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def word(pattern: str) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": pattern}},
        "required": ["word"],
    }


TOOLS = [
    types.Tool(name="nested", description="(a+)+", input_schema=word("^(a+)+$")),
    types.Tool(name="either", description="(a|a)+", input_schema=word("^(a|a)+$")),
    types.Tool(
        name="keyed",
        description="keys matching (a|a)+",
        input_schema={
            "type": "object",
            "patternProperties": {"^(a|a)+$": {"type": "integer"}},
            "additionalProperties": False,
        },
    ),
    types.Tool(
        name="broken",
        description="a key that is no regular expression",
        input_schema={
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "patternProperties": {"(": {"type": "integer"}},
        },
    ),
]


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = f"{params.name} called with {json.dumps(params.arguments, sort_keys=True)}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("patterns", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
