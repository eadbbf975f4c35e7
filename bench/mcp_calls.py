"""What an MCP tool call costs through loopwright, beside the SDK's bare session.

    python bench/mcp_calls.py [--calls 200]

Against the test server (``tests/mcp_servers/demo_server.py``, stdio), in one process:
the SDK's ``ClientSession.call_tool`` alone (the floor), the same call through a
loopwright tool (``Tool.run``: the binder, the race against the server's death, the
result as text) and through ``execute_tools`` (what an agent's call takes), sequential
and 20 at a time; then starting the server (spawn + initialize) and a reconnection
after the server was killed. Medians in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import loopwright as lw
from loopwright.mcp import mcp_server

DEMO = str(Path(__file__).parents[1] / "tests" / "mcp_servers" / "demo_server.py")


async def timed(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


async def main(calls: int) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    rows: list[tuple[str, float]] = []
    params = StdioServerParameters(command=sys.executable, args=[DEMO])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        rows.append(
            (
                "SDK call_tool (floor)",
                await timed(lambda: session.call_tool("echo", {"text": "x"}), calls),
            )
        )
    server = mcp_server([sys.executable, DEMO], name="demo")
    t = time.perf_counter()
    tools = {t.name: t for t in await server.tools()}
    rows.append(("start + initialize + list", (time.perf_counter() - t) * 1000))
    echo = tools["echo"]
    rows.append(("Tool.run", await timed(lambda: echo.run({"text": "x"}), calls)))
    one = lw.AssistantMessage(tool_calls=[lw.ToolCall(function="echo", arguments={"text": "x"})])
    rows.append(
        ("execute_tools, 1 call", await timed(lambda: lw.execute_tools(one, [echo]), calls))
    )
    many = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="echo", arguments={"text": "x"}) for _ in range(20)]
    )
    batch = await timed(
        lambda: lw.execute_tools(many, [echo], max_parallel=20), max(5, calls // 20)
    )
    rows.append(("execute_tools, 20 parallel (per call)", batch / 20))
    pid = int(await tools["pid"].run({"path": os.devnull}))
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.2)
    try:
        await echo.run({"text": "x"})  # fails: the server is gone
    except lw.ToolError:
        pass
    t = time.perf_counter()
    await echo.run({"text": "x"})
    rows.append(("call after a kill (reconnect + call)", (time.perf_counter() - t) * 1000))
    await server.aclose()
    width = max(len(name) for name, _ in rows)
    print(f"{'MCP (stdio, demo server)':<{width}}  median ms")
    for name, ms in rows:
        print(f"{name:<{width}}  {ms:9.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    asyncio.run(main(parser.parse_args().calls))
