"""A scriptable HTTP server on 127.0.0.1 that answers like the OpenAI and Anthropic APIs.

Each test pushes the replies it wants (a JSON body with a status and headers, a delay,
or a connection dropped half-way through the body); the server records every request it
got, so tests can check what the SDK actually sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    body: Any = None
    """A JSON value, or the body itself as ``str`` or ``bytes`` (sent as they are)."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering."""
    drop: bool = False
    """Send the headers and half of the body, then close the connection."""
    drip: float = 0.0
    """Send the body one byte per this many seconds (a server that never quite stops)."""


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    in_flight: int = 0
    """Requests the server was answering when this one came, itself included."""


class WireServer:
    """See the module documentation. Use as a context manager, or call :meth:`close`."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Request] = []
        self.respond: Callable[[Request], Reply | None] | None = None
        self.in_flight = 0
        """Requests being answered now (read, and not yet fully answered)."""
        """When set, answers each request (None: the next scripted reply)."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(
                    "POST",
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with server._lock:
                    server.in_flight += 1
                    request.in_flight = server.in_flight
                    server.requests.append(request)
                    reply = server.respond(request) if server.respond else None
                    if reply is None and server.replies:
                        reply = server.replies.popleft()
                if reply is None:
                    reply = Reply({"error": {"message": "test server: no reply scripted"}}, 599)
                try:
                    self._answer(reply)
                except OSError:  # the client gave up (timeouts): nothing to do
                    self.close_connection = True
                finally:
                    with server._lock:
                        server.in_flight -= 1

            do_GET = do_POST

            def _answer(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if isinstance(reply.body, bytes):
                    payload = reply.body
                elif isinstance(reply.body, str):
                    payload = reply.body.encode("utf-8", "surrogatepass")
                else:
                    payload = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if not any(k.lower() == "content-type" for k in reply.headers):
                    self.send_header("content-type", "application/json")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.drop:
                    self.send_header("content-length", str(len(payload) + 100))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if reply.drip:
                    for i in range(len(payload)):
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                        time.sleep(reply.drip)
                    return
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *replies: Reply | dict[str, Any]) -> None:
        """Queue replies (a dict is a 200 JSON body)."""
        for r in replies:
            self.replies.append(r if isinstance(r, Reply) else Reply(r))

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests received so far."""
        return [r.body for r in self.requests]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- reply builders --------------------------------------------------------------------


def openai_reply(
    content: str | None = "",
    *,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None,
    **message: Any,
) -> dict[str, Any]:
    """A chat completion; ``tool_calls`` are ``(id, name, arguments string)``."""
    msg: dict[str, Any] = {"role": "assistant", "content": content, **message}
    if tool_calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "test-model",
        "choices": [{"index": 0, "message": msg, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def openai_error(
    message: str, code: str | None = None, kind: str = "invalid_request_error"
) -> dict[str, Any]:
    """An OpenAI error body (``kind`` is its ``type``: ``server_error`` for a 5xx)."""
    return {"error": {"message": message, "type": kind, "code": code}}


def anthropic_reply(
    *blocks: dict[str, Any],
    stop_reason: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 6},
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """An Anthropic error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}
