"""MCP servers that break the protocol, against loopwright's client: each is a real
process (``mcp_servers/raw_server.py``, JSON-RPC written by hand) whose answers no SDK
would send. Whatever it sends, a call ends as a result or an error for the model, and
the run goes on."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
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
    tmp_path: Path,
    tools: list[dict[str, Any]],
    answers: dict[str, Any],
    stderr_lines: int = 0,
    more: dict[str, Any] | None = None,
    **kwargs: Any,
) -> MCPServer:
    spec = tmp_path / "spec.json"
    data = {"tools": tools, "answers": answers, "stderr_lines": stderr_lines, **(more or {})}
    spec.write_text(json.dumps(data))
    kwargs.setdefault("name", "raw")
    return mcp_server([sys.executable, str(RAW), str(spec)], **kwargs)


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_demo() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    demo = Path(__file__).parent / "mcp_servers" / "demo_server.py"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(demo), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    yield port, proc
    proc.kill()
    proc.wait()


async def test_a_urls_credentials_are_in_no_name_message_or_transcript(
    http_demo: tuple[int, subprocess.Popen[bytes]],
) -> None:
    """The password and query of a server's URL and its header values are credentials
    (httpx sends the user and password as basic authentication): the server's name was
    its user (or ``token@host``), and errors for the model and exceptions quoted the
    URL as it was."""
    port, proc = http_demo
    url = f"http://alice:pw-hunter2@127.0.0.1:{port}/mcp?api_key=KEY-s3cr3t&v=1"
    secrets = ("pw-hunter2", "KEY-s3cr3t", "header-s3cr3t")
    s = mcp_server(url=url, retries=0, headers={"X-Key": "header-s3cr3t"})
    shown = f"{s.name} {s!r}"
    with lw.transcript_context(lw.Transcript()) as t:
        async with s:
            tools = await s.tools()
            assert (await run_one(tools, "echo", text="up")).content == "up"
            slow = asyncio.create_task(run_one(tools, "sleep", seconds=30))
            await asyncio.sleep(0.5)
            proc.kill()
            died = await asyncio.wait_for(slow, 60)
            gone = await asyncio.wait_for(run_one(tools, "echo", text="x"), 60)
    assert died.error is not None and gone.error is not None
    assert "could not be reached" in gone.content
    assert f"http://127.0.0.1:{port}/mcp`" in gone.content
    assert s.name == "127.0.0.1"
    assert mcp_server(url="https://tok3n-s3cr3t@example.com/mcp").name == "example.com"
    with pytest.raises(lw.MCPServerError) as info:
        await mcp_server(url=url.replace(str(port), str(free_port())), retries=0).tools()
    for text in (shown, died.content, gone.content, str(info.value), repr(t.events)):
        assert not any(secret in text for secret in secrets), text


async def test_schemas_whose_refs_loop_or_lead_nowhere(tmp_path: Path) -> None:
    """jsonschema recursed without end (a RecursionError) or failed to resolve (an
    Unresolvable) on the values that reach such a $ref, and the run ended."""
    loop = {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}
    tools = [
        {
            "name": "self",
            "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}},
        },
        {
            "name": "cycle",
            "inputSchema": {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/a"}},
                "$defs": loop,
            },
        },
        {
            "name": "nowhere",
            "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/gone"}}},
        },
        {
            "name": "anchor",
            "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#nope"}}},
        },
    ]
    async with raw_server(tmp_path, tools, {}) as s:
        found = await s.tools()
        for name in ("self", "cycle", "nowhere", "anchor"):
            result = await run_one(found, name, x=1)
            assert result.error is not None and result.error.type == "validation", name
            assert "cannot check these arguments" in result.content, name
            # a call whose values do not reach the $ref is checked and made
            assert (await run_one(found, name)).content == "{}", name


async def test_tools_that_change_then_cannot_be_listed_end_no_run(tmp_path: Path) -> None:
    """The server says its tools changed, then does not answer ``tools/list``: the run
    goes on with the tools it had (the next step lists them again); listing them raised
    out of the run's hook and ended the run."""
    answers = {
        "change": {"notify": ["notifications/tools/list_changed"], "then_list": "mute"},
    }
    s = raw_server(tmp_path, [tool("change"), tool("echo")], answers, timeout=1)
    script = [
        lw.ModelOutput.for_tool_call("change", {}),
        lw.ModelOutput.for_tool_call("echo", {"x": 1}),
        "done",
    ]
    model = lw.get_model("mock", outputs=script)
    state = await lw.run(lw.with_mcp(lw.react(submit=False), s), "go", model=model, db=False)
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert [r.function for r in results] == ["change", "echo"]
    assert results[1].error is None and results[1].content == '{"x": 1}'
    assert state.text == "done"
    assert s.tools_changed  # never listed since: the next use lists them


async def test_a_server_that_logs_without_end_fills_no_disk(tmp_path: Path) -> None:
    """A stdio server's stderr was a temporary file that grew with all it wrote (a
    server logging for hours filled the disk, out of sight: the file is unlinked).
    Only its end is kept, and still quoted when the server dies."""
    psutil = pytest.importorskip("psutil")
    answers = {"die": {"last_words": "the last words of this server"}}
    async with raw_server(tmp_path, [tool("die"), tool("echo")], answers, 400_000) as s:
        found = await s.tools()  # the server wrote its 20 MB of log before answering
        [proc] = [p for p in psutil.Process().children(recursive=True) if str(RAW) in p.cmdline()]
        err = os.stat(f"/proc/{proc.pid}/fd/2")
        assert not stat.S_ISREG(err.st_mode) or err.st_size < 1_000_000
        result = await asyncio.wait_for(run_one(found, "die"), 60)
        assert result.error is not None and "the last words of this server" in result.content
        assert len(result.content) < 20_000


def wait_gone(pid: int, seconds: float = 30) -> bool:
    psutil = pytest.importorskip("psutil")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


async def test_a_process_the_server_leaves_behind_is_stopped_with_it(tmp_path: Path) -> None:
    """A server that ends when its stdin closes but leaves a process of its own running
    (a browser, a worker): the SDK stops the process group only when the server itself
    does not end, so that process ran on after the run."""
    pid_file = tmp_path / "helper"
    more = {"helper_pid_file": str(pid_file)}
    async with raw_server(tmp_path, [tool("echo")], {}, more=more) as s:
        assert (await run_one(await s.tools(), "echo", x=1)).content == '{"x": 1}'
        helper = int(pid_file.read_text())
        assert not wait_gone(helper, 0)
    assert wait_gone(helper), "a process of the MCP server outlived it"


async def test_two_servers_listing_one_name_end_no_run(tmp_path: Path) -> None:
    """Two servers list a tool of one name (or one adds it mid-run): the run refused
    two tools of one name and ended; the first server's is used, with a warning."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    a = raw_server(first, [tool("echo")], {}, name="a")
    b = raw_server(
        second, [tool("echo"), tool("other")], {"echo": {"result": {"content": []}}}, name="b"
    )
    offered: list[list[str]] = []
    script = [lw.ModelOutput.for_tool_call("echo", {"x": 1}), "done"]

    def respond(messages: object, tools: list[lw.ToolInfo], config: object) -> lw.ModelOutput:
        offered.append([t.name for t in tools])
        return script[len(offered) - 1]  # type: ignore[return-value]

    model = lw.get_model("mock", outputs=respond)
    with pytest.warns(UserWarning, match="'echo' is left out: server 'a' has one"):
        state = await lw.run(lw.with_mcp(lw.react(submit=False), a, b), "go", model=model, db=False)
    result = next(m for m in state.messages if isinstance(m, lw.ToolMessage))
    assert result.content == '{"x": 1}'  # server a's (b answers nothing)
    assert sorted(offered[0]) == ["echo", "other"]


async def test_a_server_tool_named_like_the_agents_own_is_not_offered_twice(
    tmp_path: Path,
) -> None:
    """The agent's own tool wins a name a server's uses too: the model was offered both
    (two tools of one name, which providers refuse), though only the agent's ran."""

    @lw.tool
    def echo(x: int) -> str:
        """The agent's own echo.

        Args:
            x: Anything.
        """
        return "own"

    s = raw_server(tmp_path, [tool("echo"), tool("other")], {})
    offered: list[list[str]] = []
    script = [lw.ModelOutput.for_tool_call("echo", {"x": 1}), "done"]

    def respond(messages: object, tools: list[lw.ToolInfo], config: object) -> lw.ModelOutput:
        offered.append([t.name for t in tools])
        return script[len(offered) - 1]  # type: ignore[return-value]

    model = lw.get_model("mock", outputs=respond)
    agent = lw.with_mcp(lw.react(tools=[echo], submit=False), s)
    state = await lw.run(agent, "go", model=model, db=False)
    assert next(m for m in state.messages if isinstance(m, lw.ToolMessage)).content == "own"
    assert [sorted(names) for names in offered] == [["echo", "other"]] * 2


async def test_an_enormous_schema_is_left_out(tmp_path: Path) -> None:
    """A tool whose schema is megabytes (every model call would carry it, every step's
    record store it): left out with a warning, its neighbours kept."""
    props = {f"p{i}": {"type": "string", "description": "d" * 1000} for i in range(2000)}
    big = {"name": "big", "inputSchema": {"type": "object", "properties": props}}
    async with raw_server(tmp_path, [big, tool("echo")], {}) as s:
        with pytest.warns(UserWarning, match=r"'big' is left out: its input schema is 2,"):
            names = [t.name for t in await s.tools()]
    assert names == ["echo"]


def read_all(folder: Path, pattern: str) -> bytes:
    return b"".join(p.read_bytes() for p in folder.glob(pattern))


async def test_a_servers_token_it_echoes_reaches_neither_model_nor_store(tmp_path: Path) -> None:
    """A stdio server given a token in its environment writes it on its stderr, then
    dies mid-call: the end of its stderr, quoted in the error for the model, held the
    token, and the run store recorded it."""
    token = "tok-1234567890abcdef"
    answers = {"die": {"last_words": f"auth failed for SERVICE_TOKEN {token}"}}
    s = raw_server(tmp_path, [tool("die")], answers, env={"SERVICE_TOKEN": token})
    script = [lw.ModelOutput.for_tool_call("die", {}), "done"]
    model = lw.get_model("mock", outputs=script)
    db = tmp_path / "runs.db"
    state = await lw.run(lw.with_mcp(lw.react(submit=False), s), "go", model=model, db=db)
    result = next(m for m in state.messages if isinstance(m, lw.ToolMessage))
    assert result.error is not None and "auth failed for SERVICE_TOKEN" in result.content
    assert token not in result.content
    stored = read_all(tmp_path, "runs.db*")
    assert b"auth failed for SERVICE_TOKEN" in stored and token.encode() not in stored


async def test_a_servers_token_in_its_error_answers_is_not_told_to_the_model(
    tmp_path: Path,
) -> None:
    """The same server echoing its token in a JSON-RPC error, or in a result the SDK
    refuses: the error for the model quoted it."""
    token = "tok-abcdef1234567890"
    answers = {
        "refuse": {"error": {"code": -32603, "message": f"bad credentials {token}"}},
        "shape": {"result": {"content": token}},
    }
    tools = [tool(name) for name in answers]
    async with raw_server(tmp_path, tools, answers, env={"API_TOKEN": token}) as s:
        found = await s.tools()
        for name in answers:
            result = await run_one(found, name)
            assert result.error is not None, name
            assert token not in result.content, result.content
            if name == "refuse":
                assert "bad credentials [redacted]" in result.content


async def test_a_servers_own_error_coded_32000_is_an_error_not_a_lost_server(
    tmp_path: Path,
) -> None:
    """-32000 is JSON-RPC's first code for a server's own errors, and the SDK's code for
    a closed connection: a server's "quota exceeded" was taken for a server gone, its
    message lost and the server restarted."""
    answers = {"limited": {"error": {"code": -32000, "message": "quota exceeded"}}}
    async with raw_server(tmp_path, [tool("limited"), tool("echo")], answers) as s:
        found = await s.tools()
        result = await run_one(found, "limited")
        assert result.error is not None and "quota exceeded" in result.content
        assert (await run_one(found, "echo", x=1)).content == '{"x": 1}'
        assert s.connects == 1
