"""A real HTTP server on 127.0.0.1 serving a JSON schema, counting what it is asked: the
tests that a schema's reference to a URL is never fetched."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

BODY = b'{"$dynamicAnchor": "x", "$recursiveAnchor": true, "type": "integer"}'


@contextlib.contextmanager
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """The URL of a schema it serves, and the paths asked of it so far."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/s.json", asked
    finally:
        httpd.shutdown()
        httpd.server_close()
