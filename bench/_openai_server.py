"""A local OpenAI-compatible chat-completions server for the "next to a real model" bench.

    python bench/_openai_server.py --delay-ms 2      # prints "port N" once it listens

Starlette on uvicorn, on 127.0.0.1, in a process of its own (as a real server would
be). ``POST /v1/chat/completions`` waits ``--delay-ms`` and answers with one tool call:
``add`` while the request holds fewer than ``--steps - 1`` tool results, then
``submit``. It keeps no state: what to answer is read from the request, so any number of
clients (loopwright, a bare loop on the official SDK) can share it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def reply(body: dict[str, Any], steps: int) -> dict[str, Any]:
    """The completion for ``body``: the next tool call of an agent of ``steps`` steps."""
    done = sum(1 for m in body["messages"] if m.get("role") == "tool")
    if done < steps - 1:
        name, args = "add", {"a": done, "b": 1}
    else:
        name, args = "submit", {"answer": str(done)}
    call = {
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "bench"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def app(delay: float, steps: int) -> Starlette:
    async def completions(request: Request) -> Response:
        body = json.loads(await request.body())
        await asyncio.sleep(delay)
        return Response(json.dumps(reply(body, steps)), media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    sock = socket.socket()
    # answers go out at once (accepted sockets inherit it): without it, a reply written
    # in two parts waits for the client's delayed ACK, ~40 ms
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"port {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        app(args.delay_ms / 1000, args.steps), log_level="warning", access_log=False
    )
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
