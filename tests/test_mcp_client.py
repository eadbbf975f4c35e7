"""MCP servers' tools as loopwright tools, against real servers in real processes: the
test server (``mcp_servers/demo_server.py``, stdio and HTTP) and ``mcp-server-time``
from PyPI. Hostile cases: a server killed mid-call, one that hangs, one that cannot
start, huge results, bad arguments; no process is left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")
psutil = pytest.importorskip("psutil")

import loopwright as lw  # noqa: E402
from loopwright.mcp import MCPServer, MCPServerError, mcp_server  # noqa: E402

DEMO = Path(__file__).parent / "mcp_servers" / "demo_server.py"
pytestmark = pytest.mark.timeout(90)


def demo(**kwargs: object) -> MCPServer:
    return mcp_server([sys.executable, str(DEMO)], name="demo", **kwargs)  # type: ignore[arg-type]


def demo_processes() -> list[psutil.Process]:
    """This process's live descendants running the demo server."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if str(DEMO) in " ".join(p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.NoSuchProcess:
            pass
    return found


def wait_gone(pid: int, seconds: float = 10) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
async def server() -> AsyncIterator[MCPServer]:
    async with demo(prefix="d_") as s:
        yield s
    assert demo_processes() == []


def call(name: str, **arguments: object) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=arguments)])


async def run_one(tools: list[lw.Tool], name: str, **arguments: object) -> lw.ToolMessage:
    [result] = await lw.execute_tools(call(name, **arguments), tools)
    return result


async def test_tools_are_listed_as_declared(server: MCPServer) -> None:
    tools = {t.name: t for t in await server.tools()}
    assert {"d_add", "d_echo", "d_picture", "d_fail", "d_sleep", "d_grow"} <= set(tools)
    add = tools["d_add"]
    assert add.description == "Add two integers."
    assert add.info.parameters["required"] == ["a", "b"]
    assert add.info.parameters["properties"]["a"]["type"] == "integer"
    assert await server.tools() == list(tools.values())  # same objects while unchanged


async def test_include_exclude_and_names_made_safe() -> None:
    async with demo(include=["add", "echo"], prefix="my.srv/") as s:
        assert sorted(t.name for t in await s.tools()) == ["my_srv_add", "my_srv_echo"]
    async with demo(exclude=["add"]) as s:
        names = {t.name for t in await s.tools()}
        assert "add" not in names and "echo" in names


async def test_results_text_structured_image_and_error(server: MCPServer) -> None:
    tools = await server.tools()
    assert '"total": 5' in (await run_one(tools, "d_add", a=2, b=3)).content
    picture = await run_one(tools, "d_picture")
    assert picture.error is None and picture.content == "[image: image/png, 70 bytes]"
    failed = await run_one(tools, "d_fail", reason="no")
    assert failed.error is not None and failed.error.type == "tool_error"
    assert "fail" in failed.content


async def test_bad_arguments_are_refused_before_the_server(server: MCPServer) -> None:
    tools = await server.tools()
    result = await run_one(tools, "d_add", a="two", b=3)
    assert result.error is not None and result.error.type == "validation"
    result = await run_one(tools, "d_add", a=1)
    assert result.error is not None and "b" in result.content


async def test_huge_result_is_bounded(server: MCPServer) -> None:
    tools = await server.tools()
    [result] = await lw.execute_tools(call("d_huge", n=5_000_000), tools, max_output=10_000)
    assert len(result.content.encode()) <= 10_000 and "truncated" in result.content


async def test_twenty_concurrent_calls(server: MCPServer) -> None:
    tools = await server.tools()
    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="d_echo", arguments={"text": f"n{i}"}) for i in range(20)]
    )
    results = await lw.execute_tools(message, tools, max_parallel=20)
    assert [r.content for r in results] == [f"n{i}" for i in range(20)]
    assert server.connects == 1


async def test_a_call_past_its_timeout_is_an_error_and_the_server_lives_on() -> None:
    async with demo(timeout=1) as s:
        tools = await s.tools()
        result = await run_one(tools, "sleep", seconds=30)
        assert result.error is not None and "no answer within 1 s" in result.content
        assert "restarts" not in result.content
        assert (await run_one(tools, "echo", text="still")).content == "still"
        assert s.connects == 1


async def test_a_hung_server_is_restarted(tmp_path: Path) -> None:
    async with demo(timeout=1) as s:
        tools = await s.tools()
        pid = int((await run_one(tools, "pid", path=str(tmp_path / "p"))).content)
        result = await run_one(tools, "freeze")
        assert result.error is not None and "the next call restarts it" in result.content
        assert wait_gone(pid)
        assert (await run_one(tools, "echo", text="back")).content == "back"
        assert s.connects == 2


async def test_server_killed_mid_call_then_used_again(tmp_path: Path) -> None:
    async with demo() as s:
        tools = await s.tools()
        marker = tmp_path / "crashed"
        result = await run_one(tools, "crash", marker=str(marker))
        assert result.error is not None and "went away" in result.content
        assert marker.exists()
        assert (await run_one(tools, "echo", text="again")).content == "again"
        # killed from outside while a call is in flight
        pid = int((await run_one(tools, "pid", path=str(tmp_path / "p"))).content)
        slow = asyncio.create_task(run_one(tools, "sleep", seconds=30))
        await asyncio.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        result = await asyncio.wait_for(slow, 10)
        assert result.error is not None and "went away" in result.content
        assert (await run_one(tools, "echo", text="third")).content == "third"
        assert s.connects == 3


async def test_a_server_that_closes_its_stream_then_used_again(tmp_path: Path) -> None:
    async with demo(timeout=30) as s:
        tools = await s.tools()
        result = await asyncio.wait_for(run_one(tools, "hang_up", path=str(tmp_path / "p")), 20)
        assert result.error is not None and "went away" in result.content
        assert wait_gone(int((tmp_path / "p").read_text()))  # the silent process was stopped
        assert (await run_one(tools, "echo", text="again")).content == "again"
        assert s.connects == 2


async def test_a_server_that_cannot_start_names_command_and_stderr() -> None:
    s = mcp_server(
        [sys.executable, str(DEMO)], env={"DEMO_FAIL_AT_START": "1"}, retries=1, backoff=0.01
    )
    with pytest.raises(MCPServerError) as info:
        await s.tools()
    message = str(info.value)
    assert "could not start" in message and str(DEMO) in message
    assert "cannot open the frobnicator database" in message
    missing = mcp_server(["/nonexistent/mcp-server"], retries=0)
    with pytest.raises(MCPServerError, match=r"/nonexistent/mcp-server"):
        await missing.tools()
    assert demo_processes() == []


async def test_a_server_that_cannot_start_is_an_error_for_the_model_on_a_call() -> None:
    async with demo() as s:
        tools = await s.tools()
    s.transport = type(s.transport)(command="/nonexistent/mcp-server")
    s.retries = 1
    s.backoff = 0.01
    result = await run_one(tools, "echo", text="x")
    assert result.error is not None and "could not start" in result.content


async def test_list_changed_is_picked_up(server: MCPServer) -> None:
    tools = await server.tools()
    assert "d_extra" not in {t.name for t in tools}
    assert not server.tools_changed
    assert (await run_one(tools, "d_grow")).content == "grown"
    for _ in range(100):
        if server.tools_changed:
            break
        await asyncio.sleep(0.02)
    tools = await server.tools()
    assert (await run_one(tools, "d_extra")).content == "extra!"


async def test_prompts_and_resources(server: MCPServer) -> None:
    assert [p.name for p in await server.list_prompts()] == ["greet"]
    prompt = await server.get_prompt("greet", {"name": "Bo"})
    assert prompt.messages[0].content.text == "Say hello to Bo."  # type: ignore[union-attr]
    assert [str(r.uri) for r in await server.list_resources()] == ["demo://readme"]
    assert await server.read_resource("demo://readme") == "demo readme text"


async def test_used_by_an_agent_and_recorded_like_any_tool() -> None:
    model = lw.get_model(
        "mock",
        outputs=[lw.ModelOutput.for_tool_call("add", {"a": 20, "b": 22}), "It is 42."],
    )
    async with demo(include=["add"]) as s:
        agent = lw.react(tools=await s.tools(), submit=False)
        state = await lw.run(agent, "add", model=model, db=False)
    tool_messages = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert '"total": 42' in tool_messages[0].content
    assert state.text == "It is 42."


async def test_cancellation_leaves_no_process() -> None:
    s = demo()
    tools = await s.tools()
    task = asyncio.create_task(run_one(tools, "sleep", seconds=30))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(demo_processes()) == 1  # a cancelled call does not stop the server
    await s.aclose()
    assert demo_processes() == []


def test_a_new_event_loop_starts_a_new_connection() -> None:
    s = demo(include=["echo"])

    async def once(text: str) -> str:
        tools = await s.tools()
        return (await run_one(tools, "echo", text=text)).content

    assert asyncio.run(once("one")) == "one"
    assert asyncio.run(once("two")) == "two"
    assert s.connects == 2
    assert demo_processes() == []


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {src!r})
    import loopwright as lw

    async def main():
        s = lw.mcp_server([sys.executable, {demo!r}])
        tools = {{t.name: t for t in await s.tools()}}
        await tools["pid"].run({{"path": {pidfile!r}}})
        print("ready", flush=True)
        {body}

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    ("body", "how"),
    [
        ('await tools["sleep"].run({"seconds": 60})', "sigint"),
        (
            "with lw.time_limit(1):\n            await lw.run("
            'lw.react(tools=list(tools.values())), "x", model=lw.get_model("mock", '
            'outputs=[lw.ModelOutput.for_tool_call("sleep", {"seconds": 60})]), db=False)',
            "exit",
        ),
    ],
)
def test_no_process_left_after_ctrl_c_or_a_time_limit(tmp_path: Path, body: str, how: str) -> None:
    pidfile = tmp_path / "pid"
    src = str(Path(lw.__file__).parents[1])
    script = SCRIPT.format(src=src, demo=str(DEMO), pidfile=str(pidfile), body=body)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    server_pid = int(pidfile.read_text())
    assert psutil.pid_exists(server_pid)
    if how == "sigint":
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
    proc.wait(30)
    assert wait_gone(server_pid), "the MCP server outlived its client"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_port() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    yield port, procs
    for p in procs:
        p.kill()
        p.wait()


def start_http(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 20
    while time.monotonic() < end:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    raise AssertionError("the HTTP demo server did not start")


async def test_streamable_http_server_dies_and_comes_back(
    http_port: tuple[int, list[subprocess.Popen[bytes]]],
) -> None:
    port, procs = http_port
    procs.append(start_http(port))
    url = f"http://127.0.0.1:{port}/mcp"
    async with mcp_server(url=url, headers={"X-Test": "1"}, retries=1, backoff=0.05) as s:
        assert s.name == "127.0.0.1"
        tools = await s.tools()
        assert '"total": 3' in (await run_one(tools, "add", a=1, b=2)).content
        slow = asyncio.create_task(run_one(tools, "sleep", seconds=30))
        await asyncio.sleep(0.5)
        procs[0].kill()
        result = await asyncio.wait_for(slow, 20)
        assert result.error is not None
        procs.append(start_http(port))
        assert (await run_one(tools, "echo", text="back")).content == "back"
        assert s.connects == 2


async def test_a_published_server_from_pypi() -> None:
    pytest.importorskip("mcp_server_time")
    command = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    async with mcp_server(command, prefix="time_") as s:
        tools = {t.name: t for t in await s.tools()}
        assert {"time_get_current_time", "time_convert_time"} <= set(tools)
        result = await run_one(list(tools.values()), "time_get_current_time", timezone="UTC")
        assert result.error is None and '"timezone": "UTC"' in result.content
        bad = await run_one(list(tools.values()), "time_get_current_time", timezone="Nowhere/X")
        assert bad.error is not None


def add_script() -> lw.Model:
    return lw.get_model(
        "mock", outputs=[lw.ModelOutput.for_tool_call("add", {"a": 1, "b": 2}), "3."]
    )


async def test_with_mcp_starts_the_server_for_a_run_and_stops_it_after() -> None:
    s = demo(include=["add"])
    agent = lw.with_mcp(lw.react(submit=False), s)
    state = await lw.run(agent, "add", model=add_script(), db=False)
    result = next(m for m in state.messages if isinstance(m, lw.ToolMessage))
    assert '"total": 3' in result.content
    assert state.extra_tools == []
    assert demo_processes() == []
    await lw.run(agent, "add", model=add_script(), db=False)
    assert s.connects == 2 and demo_processes() == []


async def test_with_mcp_shares_a_held_server_across_runs() -> None:
    s = demo(include=["add"])
    agent = lw.with_mcp(lw.react(submit=False), s)
    async with s:
        for _ in range(2):
            await lw.run(agent, "add", model=add_script(), db=False)
            assert len(demo_processes()) == 1
    assert s.connects == 1 and demo_processes() == []


async def test_with_mcp_stops_the_server_when_the_run_is_cancelled() -> None:
    s = demo(include=["sleep"])
    model = lw.get_model("mock", outputs=[lw.ModelOutput.for_tool_call("sleep", {"seconds": 60})])
    task = asyncio.create_task(lw.run(lw.with_mcp(lw.react(), s), "x", model=model, db=False))
    for _ in range(400):  # until the server runs
        if demo_processes():
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert demo_processes() == []


async def test_the_transcript_names_the_server() -> None:
    async with demo(include=["add"]) as s:
        with lw.transcript_context(lw.Transcript()) as t:
            await run_one(await s.tools(), "add", a=1, b=1)
    [event] = [e for e in t.events if isinstance(e, lw.ToolEvent)]
    infos = [e for e in event.events if isinstance(e, lw.InfoEvent)]
    assert infos and infos[0].data == {"mcp_server": "demo", "tool": "add"}


def test_the_readme_mcp_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("mcp_server_time")
    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## MCP servers, both ways", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    src = str(Path(lw.__file__).parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": src},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Asia/Tokyo"


async def test_approval_policies_apply_to_mcp_tools(tmp_path: Path) -> None:
    policy = lw.approval_policy([("d_pid", "reject"), ("*", "approve")])
    async with demo(prefix="d_") as s:
        tools = await s.tools()
        with lw.approver(policy):
            refused = await run_one(tools, "d_pid", path=str(tmp_path / "p"))
            allowed = await run_one(tools, "d_echo", text="ok")
    assert refused.error is not None and refused.error.type == "approval"
    assert not (tmp_path / "p").exists()  # the server never saw the call
    assert allowed.content == "ok"


async def test_a_server_that_never_answers_initialize_times_out() -> None:
    s = mcp_server(["sleep", "600"], startup_timeout=1, retries=0)
    with pytest.raises(MCPServerError, match=r"could not start: `sleep 600`.*initialize"):
        await s.tools()
    leftovers = [p for p in psutil.Process().children(recursive=True) if p.name() == "sleep"]
    assert all(p.status() == psutil.STATUS_ZOMBIE for p in leftovers)


async def test_a_hostile_tool_list() -> None:
    hostile = Path(__file__).parent / "mcp_servers" / "hostile_server.py"
    async with mcp_server([sys.executable, str(hostile)]) as s:
        with pytest.warns(UserWarning, match="'bad' is left out"):
            tools = {t.name: t for t in await s.tools()}
        assert set(tools) == {"a_b", "a_b_2", "n" * 64, "wordy"}
        assert len(tools["wordy"].description) < 8100
        # each safe name still calls the server's own tool
        assert (await run_one(list(tools.values()), "a_b")).content == "a.b"
        assert (await run_one(list(tools.values()), "a_b_2")).content == "a_b"


async def test_with_mcp_picks_up_changed_tools_at_the_next_step() -> None:
    offered: list[list[str]] = []
    script = [
        lw.ModelOutput.for_tool_call("grow", {}),
        lw.ModelOutput.for_tool_call("echo", {"text": "wait for the notification"}),
        lw.ModelOutput.for_tool_call("extra", {}),
        "done",
    ]

    def respond(messages: object, tools: list[lw.ToolInfo], config: object) -> lw.ModelOutput:
        offered.append([t.name for t in tools])
        return script[len(offered) - 1]  # type: ignore[return-value]

    s = demo(include=["grow", "echo", "extra"])
    agent = lw.with_mcp(lw.react(submit=False), s)
    state = await lw.run(agent, "grow", model=lw.get_model("mock", outputs=respond), db=False)
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert "extra" not in offered[0]
    assert "extra" in offered[-1]
    assert results[-1].function == "extra" and results[-1].content == "extra!"
    assert results[-1].error is None
