"""Serving loopwright tools and agents over MCP (``loopwright mcp serve``), driven by the
SDK's own client over stdio and Streamable HTTP, and by loopwright's client."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import mcp_types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

import loopwright as lw
from loopwright.cli import main
from loopwright.mcp import mcp_server, served_tools
from loopwright.mcp._serve import mcp_app

TOOLS = Path(__file__).parent / "mcp_servers" / "lw_tools.py"
SRC = str(Path(lw.__file__).parents[1])
pytestmark = pytest.mark.timeout(90)


def serve_argv(*specs: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "loopwright", "mcp", "serve", *specs, *extra]


def stdio_params(*specs: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=serve_argv(*specs)[1:],
        env={"PYTHONPATH": SRC},
    )


def text_of(result: mcp_types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def test_sdk_client_lists_and_calls_served_tools_over_stdio() -> None:
    async with (
        stdio_client(stdio_params(f"{TOOLS}:tools")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) == {"multiply", "noisy", "refuse"}
        assert listed["multiply"].description == "Multiply two integers."
        assert listed["multiply"].input_schema["properties"]["a"]["type"] == "integer"
        result = await session.call_tool("multiply", {"a": 6, "b": 7})
        assert not result.is_error and text_of(result) == "42"
        coerced = await session.call_tool("multiply", {"a": "6", "b": 7})
        assert text_of(coerced) == "42"  # the binder's coercion, as for a model's call
        bad = await session.call_tool("multiply", {"a": "six"})
        assert bad.is_error and "b" in text_of(bad)
        refused = await session.call_tool("refuse", {"why": "no"})
        assert refused.is_error and text_of(refused) == "refused: no"
        unknown = await session.call_tool("nope", {})
        assert unknown.is_error
        noisy = await session.call_tool("noisy", {"text": "clean"})
        assert text_of(noisy) == "clean"  # a tool's print() did not break the stream
        assert text_of(await session.call_tool("multiply", {"a": 2, "b": 2})) == "4"


async def test_an_agent_served_as_one_tool() -> None:
    async with (
        stdio_client(stdio_params(f"{TOOLS}:helper")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        [tool] = (await session.list_tools()).tools
        assert tool.name == "helper" and tool.input_schema["required"] == ["input"]
        result = await session.call_tool("helper", {"input": "What is the answer?"})
        assert not result.is_error and text_of(result) == "forty-two"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        serve_argv(f"{TOOLS}:tools", "think", extra=("--transport", "http", "--port", str(port))),
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


async def test_streamable_http_served_and_used_by_loopwrights_client(http_server: str) -> None:
    async with mcp_server(url=http_server, prefix="lw_") as s:
        tools = {t.name: t for t in await s.tools()}
        assert set(tools) == {"lw_multiply", "lw_noisy", "lw_refuse", "lw_think"}
        message = lw.AssistantMessage(
            tool_calls=[lw.ToolCall(function="lw_multiply", arguments={"a": 3, "b": 5})]
        )
        [result] = await lw.execute_tools(message, list(tools.values()))
        assert result.content == "15"


def test_serving_refuses_what_is_not_a_tool_or_agent() -> None:
    with pytest.raises(lw.ConfigurationError, match="neither a Tool nor an agent"):
        served_tools([42])
    with pytest.raises(lw.ConfigurationError, match="repeated"):
        mcp_app([lw.tools.builtin.think(), lw.tools.builtin.think()])


def test_cli_reports_a_bad_spec(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", f"{TOOLS}:missing"]) == 2
    assert "has no 'missing'" in capsys.readouterr().err


def test_stdout_carries_only_protocol_messages() -> None:
    """On the wire: a tool that prints does not put its text on the protocol's stdout."""
    import json

    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "noisy", "arguments": {"text": "clean"}},
        },
    ]
    proc = subprocess.Popen(
        serve_argv(f"{TOOLS}:tools"),
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = []
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                lines.append(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(30)
    answers = [json.loads(line) for line in lines]  # each line is JSON, not noise
    assert answers[1]["id"] == 2
    assert answers[1]["result"]["content"][0]["text"] == "clean"
    assert proc.stderr is not None and "noise on stdout" in proc.stderr.read()


async def test_a_tools_bug_tells_the_client_nothing_of_this_side(tmp_path: Path) -> None:
    """A served tool that raises (a bug, not a ToolError): the SDK answered the client
    with the exception's message, which holds whatever this side put there."""
    (tmp_path / "buggy.py").write_text(
        textwrap.dedent(
            '''
            import loopwright as lw

            @lw.tool
            def buggy(x: int) -> str:
                """Has a bug.

                Args:
                    x: Anything.
                """
                raise RuntimeError("cannot open /home/alice/.config token=sk-s3cr3t")
            '''
        )
    )
    log = tmp_path / "stderr"
    with log.open("w") as errlog:
        async with (
            stdio_client(stdio_params(f"{tmp_path / 'buggy.py'}:buggy"), errlog=errlog) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with pytest.raises(MCPError) as info:
                await session.call_tool("buggy", {"x": 1})
            assert "sk-s3cr3t" not in str(info.value) and "alice" not in str(info.value)
            assert "RuntimeError" in info.value.message
            # the server lives on
            assert (await session.list_tools()).tools[0].name == "buggy"
    assert "sk-s3cr3t" in log.read_text()  # this side's log has it


async def test_many_concurrent_calls_run_a_few_at_a_time(tmp_path: Path) -> None:
    """A client sending 40 calls at once: the SDK starts each at once (40 agent runs,
    or 40,000); at most ``max_parallel`` (8) run, the rest wait, all are answered."""
    (tmp_path / "busy.py").write_text(
        textwrap.dedent(
            '''
            import asyncio
            import loopwright as lw

            running = [0, 0]  # now, most

            @lw.tool
            async def busy() -> int:
                """Work a while; answer the most calls seen running at once."""
                running[0] += 1
                running[1] = max(running)
                await asyncio.sleep(0.3)
                running[0] -= 1
                return running[1]
            '''
        )
    )
    async with (
        stdio_client(stdio_params(f"{tmp_path / 'busy.py'}:busy")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        results = await asyncio.gather(*(session.call_tool("busy", {}) for _ in range(40)))
    most = max(int(text_of(r)) for r in results)
    assert not any(r.is_error for r in results)
    assert 1 <= most <= 8
