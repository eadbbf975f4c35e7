"""An MCP server for the tests, written with the SDK: stdio, or Streamable HTTP on a port.

    python demo_server.py                 # stdio
    python demo_server.py http PORT       # http://127.0.0.1:PORT/mcp

Its tools cover what a client must handle: text, structured and image results, an
error, a call that hangs, a crash mid-call, a huge result, and a tool list that changes.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, Image, MCPServer
from pydantic import BaseModel

server = MCPServer("demo")

if os.environ.get("DEMO_FAIL_AT_START"):
    print("demo: cannot open the frobnicator database", file=sys.stderr, flush=True)
    sys.exit(3)


class Sum(BaseModel):
    total: int


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> Sum:
    return Sum(total=a + b)


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="A 2x1 PNG image.")
def picture() -> Image:
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000002000000010806000000f478d4fa"
        "0000000d49444154789c63f8cfc0f01f0005000201a0e9a8f80000000049454e44ae426082"
    )
    return Image(data=png, format="png")


@server.tool(description="Always fails.")
def fail(reason: str) -> str:
    raise ValueError(f"it failed: {reason}")


@server.tool(description="Sleep, then answer.")
async def sleep(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="Write a marker file, then die without answering.")
def crash(marker: str) -> str:
    with open(marker, "a") as f:
        f.write(f"{os.getpid()}\n")
    os._exit(1)


@server.tool(description="Stop this whole process (SIGSTOP): it answers nothing, not even a ping.")
def freeze() -> str:
    import signal

    os.kill(os.getpid(), signal.SIGSTOP)
    return "thawed"


@server.tool(description="Close stdout (the protocol's stream) and stay alive, silent.")
async def hang_up(path: str) -> str:
    Path(path).write_text(str(os.getpid()))  # noqa: ASYNC240 - a test server
    # the SDK serves the wire from a private duplicate of stdout: close every pipe
    # but stdin's, so the client reads the end of the stream from a live process
    stdin = os.readlink("/proc/self/fd/0")
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:") and target != stdin:
            os.close(int(fd))
    await asyncio.sleep(600)
    return "never"


@server.tool(description="A result of n characters.")
def huge(n: int) -> str:
    return "x" * n


@server.tool(description="Write this server's process id to a file.")
def pid(path: str) -> str:
    with open(path, "w") as f:
        f.write(str(os.getpid()))
    return str(os.getpid())


@server.tool(description="Add the tool 'extra' and tell the client its tools changed.")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "extra!", name="extra", description="Added later.")
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


@server.prompt(description="Greet someone.")
def greet(name: str) -> str:
    return f"Say hello to {name}."


@server.resource("demo://readme", description="The readme.")
def readme() -> str:
    return "demo readme text"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
