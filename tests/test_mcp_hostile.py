"""MCP servers that break the protocol, against loopwright's client: each is a real
process (``mcp_servers/raw_server.py``, JSON-RPC written by hand) whose answers no SDK
would send. Whatever it sends, a call ends as a result or an error for the model, and
the run goes on."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import loopwright as lw
from loopwright.mcp import MCPServer, mcp_server

RAW = Path(__file__).parent / "mcp_servers" / "raw_server.py"
OBJECT = {"type": "object", "properties": {}}
pytestmark = pytest.mark.timeout(90)


def raw_server(
    tmp_path: Path, tools: list[dict[str, Any]], answers: dict[str, Any], **kwargs: Any
) -> MCPServer:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tools": tools, "answers": answers}))
    return mcp_server([sys.executable, str(RAW), str(spec)], name="raw", **kwargs)


def tool(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJECT, **more}


async def run_one(tools: list[lw.Tool], name: str, **arguments: object) -> lw.ToolMessage:
    message = lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=arguments)])
    [result] = await lw.execute_tools(message, tools)
    return result


async def test_malformed_results_are_errors_for_the_model(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    answers = {
        "not_a_list": {"result": {"content": "text where a list belongs"}},
        "unknown_kind": {"result": {"content": [{"type": "hologram", "data": 1}]}},
        "no_text": {"result": {"content": [{"type": "text"}]}},
        "unstructured": {"result": {"content": [{"type": "text", "text": "no data"}]}},
        "wrong_structure": {
            "result": {"content": [], "structuredContent": {"n": "not an integer"}}
        },
    }
    tools = [tool(n) for n in answers if n not in ("unstructured", "wrong_structure")]
    tools += [tool(n, outputSchema=schema) for n in ("unstructured", "wrong_structure")]
    async with raw_server(tmp_path, [*tools, tool("echo")], answers) as s:
        found = await s.tools()
        for name in answers:
            result = await run_one(found, name)
            assert result.error is not None and result.error.type == "tool_error", name
            assert "invalid answer" in result.content and len(result.content) < 1500, name
        # the server is still the same one, and still used
        assert (await run_one(found, "echo", x=1)).content == '{"x": 1}'
        assert s.connects == 1


async def test_invalid_utf8_on_stdout_is_replaced_not_a_dead_connection(tmp_path: Path) -> None:
    text = '{"type": "text", "text": "a\xff\xfeb"}'
    raw = '{"jsonrpc": "2.0", "id": {ID}, "result": {"content": [' + text + "]}}"
    answers = {"bytes": {"raw": raw}}
    async with raw_server(tmp_path, [tool("bytes"), tool("echo")], answers, timeout=600) as s:
        found = await s.tools()
        # the SDK's strict decoding used to kill its reader: the call waited its timeout
        result = await asyncio.wait_for(run_one(found, "bytes"), 60)
        assert result.error is None and result.content == "a\ufffd\ufffdb"
        assert (await asyncio.wait_for(run_one(found, "echo", x=2), 60)).content == '{"x": 2}'
        assert s.connects == 1
