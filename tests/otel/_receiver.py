"""A small OTLP/HTTP trace receiver on 127.0.0.1 (protobuf, optionally gzipped): what
arrives is decoded with opentelemetry-proto."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class Received:
    """A span as it arrived: its name, attributes, ids and service."""

    name: str
    attributes: dict[str, Any]
    span_id: bytes
    parent_span_id: bytes
    trace_id: bytes
    service: str
    events: list[str] = field(default_factory=list)


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


class Receiver:
    """A small OTLP/HTTP trace receiver (protobuf, optionally gzipped)."""

    def __init__(self, delay: float = 0.0) -> None:
        self.spans: list[Received] = []
        self.paths: list[str] = []
        self.requests: list[int] = []  # the spans each request carried
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.paths.append(self.path)
                receiver.requests.append(
                    sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                )
                for rs in request.resource_spans:
                    resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            receiver.spans.append(
                                Received(
                                    name=s.name,
                                    attributes={a.key: _value(a.value) for a in s.attributes},
                                    span_id=s.span_id,
                                    parent_span_id=s.parent_span_id,
                                    trace_id=s.trace_id,
                                    service=str(resource.get("service.name")),
                                    events=[e.name for e in s.events],
                                )
                            )
                time.sleep(delay)  # a slow collector: answers late, but answers
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def named(self, name: str) -> list[Received]:
        return [s for s in self.spans if s.name == name]


class BlackHole:
    """A TCP server on 127.0.0.1 that accepts connections and never answers (a collector
    that hangs): what a client sends it waits for a reply that does not come."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/v1/traces"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._hold, daemon=True)
        self.thread.start()

    def _hold(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:  # closed
                return
            self.held.append(conn)  # kept open, never read, never answered

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


def dead_url() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on (connections refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/traces"
