"""Serving the viewer: a socket on the address asked for, uvicorn on it."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path

from .._errors import ConfigurationError
from ..log._db import connect

__all__ = ["LOCAL_HOSTS", "listen", "serve"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as ex:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {ex.strerror}") from ex
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    db: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the viewer of the run store ``db`` until interrupted.

    Args:
        db: The run store (it must exist: the viewer only reads).
        host: The address to listen on. Another than this machine's loopback needs a
            ``token`` (one is made when ``None``): anyone who can reach the port could
            read the runs otherwise.
        port: The port (0: any free one).
        token: A secret every request must carry.
        ready: Called with the URL once the server listens.

    Raises:
        RunStoreError: ``db`` is not a readable run store.
        ConfigurationError: The address cannot be listened on.
    """
    import uvicorn

    from ._app import create_app

    path = Path(db)
    connect(path, create=False).close()  # a clear error now, not at the first request
    if host not in LOCAL_HOSTS and token is None:
        token = secrets.token_urlsafe(24)
    sock = listen(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    if token is not None:
        url += f"?token={token}"
    app = create_app(path, token=token)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    if ready is not None:
        ready(url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
