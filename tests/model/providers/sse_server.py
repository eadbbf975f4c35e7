"""A server on 127.0.0.1 that streams server-sent events as the OpenAI and Anthropic APIs do.

Each request is answered with the next scripted :class:`Stream`: its events are written
one HTTP chunk each (``transfer-encoding: chunked``, flushed one by one, as the APIs
send them); ``cut_after`` closes the connection after that many events without ending
the chunked body (a connection cut mid-stream). The builders below make the events of
the two wire formats. Used by the streaming tests and by ``bench/streaming.py``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """One scripted streamed answer."""

    events: list[bytes | Callable[[], bytes]] = field(default_factory=list)
    """The SSE events (a callable is called when its event is sent, e.g. to stamp it)."""
    cut_after: int | None = None
    """Close the connection after this many events (None: end the stream normally)."""
    gate: threading.Event | None = None
    """Wait for this before sending each event after the first ``gate_after``."""
    gate_after: int = 1
    status: int = 200
    interval: float = 0.0
    """Seconds to wait between events (a model writing at a pace)."""


class SSEServer:
    """See the module documentation. Use as a context manager."""

    def __init__(self) -> None:
        self.streams: deque[Stream] = deque()
        self.bodies: list[Any] = []
        self.finished = threading.Event()
        """Set when a stream was fully written (or its connection dropped by the client)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.bodies.append(json.loads(raw) if raw else None)
                stream = server.streams.popleft() if server.streams else Stream(status=599)
                try:
                    self._send(stream)
                except OSError:  # the client went away
                    self.close_connection = True
                finally:
                    server.finished.set()

            def _send(self, stream: Stream) -> None:
                self.send_response(stream.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, event in enumerate(stream.events):
                    if stream.cut_after is not None and i >= stream.cut_after:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    if i >= stream.gate_after and stream.gate is not None:
                        stream.gate.wait(10)
                    if i and stream.interval:
                        time.sleep(stream.interval)
                    data = event() if callable(event) else event
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if stream.cut_after is not None:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def push(self, *streams: Stream) -> None:
        self.streams.extend(streams)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> SSEServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- OpenAI chat-completion chunks -------------------------------------------------------


def _openai_chunk(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
    chunk = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "test-model",
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def openai_delta(finish: str | None = None, **delta: Any) -> bytes:
    """One chunk of choice 0 with ``delta`` (``content=``, ``tool_calls=``...)."""
    return _openai_chunk([{"index": 0, "delta": delta, "finish_reason": finish}])


def openai_tool_delta(index: int, *, id: str | None = None, name: str | None = None,
                      arguments: str | None = None) -> bytes:  # fmt: skip
    """A chunk carrying a piece of tool call ``index``."""
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"], call["type"] = id, "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    call["function"] = function
    return openai_delta(tool_calls=[call])


def openai_usage(prompt: int = 10, completion: int = 5) -> bytes:
    """The last chunk with ``include_usage``: no choices, the usage."""
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "total_tokens": prompt + completion}  # fmt: skip
    return _openai_chunk([], usage)


OPENAI_DONE = b"data: [DONE]\n\n"


def openai_text_stream(pieces: Iterable[str], finish: str = "stop") -> list[bytes]:
    """A whole text reply: a role chunk, one chunk a piece, the finish, usage, [DONE]."""
    return [
        openai_delta(role="assistant", content=""),
        *(openai_delta(content=p) for p in pieces),
        openai_delta(finish=finish),
        openai_usage(),
        OPENAI_DONE,
    ]


# --- Anthropic message stream events ----------------------------------------------------


def anthropic_event(kind: str, **data: Any) -> bytes:
    payload = json.dumps({"type": kind, **data}).encode()
    return b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n"


def anthropic_start(input_tokens: int = 12) -> bytes:
    return anthropic_event(
        "message_start",
        message={
            "id": "msg_stream",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    )


def anthropic_end(stop_reason: str = "end_turn", output_tokens: int = 7) -> list[bytes]:
    return [
        anthropic_event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        anthropic_event("message_stop"),
    ]


def anthropic_text_block(index: int, pieces: Iterable[str]) -> list[bytes]:
    return [
        anthropic_event(
            "content_block_start", index=index, content_block={"type": "text", "text": ""}
        ),
        *(
            anthropic_event(
                "content_block_delta", index=index, delta={"type": "text_delta", "text": p}
            )
            for p in pieces
        ),
        anthropic_event("content_block_stop", index=index),
    ]


def anthropic_tool_block(index: int, id: str, name: str, pieces: Iterable[str]) -> list[bytes]:
    return [
        anthropic_event(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": id, "name": name, "input": {}},
        ),
        *(
            anthropic_event(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": p},
            )
            for p in pieces
        ),
        anthropic_event("content_block_stop", index=index),
    ]


def anthropic_thinking_block(index: int, pieces: Iterable[str]) -> list[bytes]:
    return [
        anthropic_event(
            "content_block_start",
            index=index,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        ),
        *(
            anthropic_event(
                "content_block_delta",
                index=index,
                delta={"type": "thinking_delta", "thinking": p},
            )
            for p in pieces
        ),
        anthropic_event(
            "content_block_delta", index=index, delta={"type": "signature_delta", "signature": "s"}
        ),
        anthropic_event("content_block_stop", index=index),
    ]


def stamp() -> bytes:
    """An OpenAI content chunk whose text is the time it was sent (``perf_counter_ns``)."""
    return openai_delta(content=f"{time.perf_counter_ns()} ")
