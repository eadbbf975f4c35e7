"""The host folders that back sandboxes: made private, removed on cleanup or at exit."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import sys
import tempfile
import threading

__all__ = ["make_root", "remove_root"]

_live: set[str] = set()
_lock = threading.Lock()


def make_root(prefix: str = "loopwright-sandbox-") -> str:
    """Create a private (0700) host folder for one sandbox; it is removed at exit if
    :func:`remove_root` was never called."""
    root = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _live.add(root)
    return root


def _make_writable(path: str) -> None:
    with contextlib.suppress(OSError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode):
            os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU)


def remove_root(root: str) -> None:
    """Delete a sandbox folder, whatever permissions the sandboxed code left on it."""

    def retry(func: object, path: str, exc: BaseException) -> None:
        # a folder without write/search permission: fix it (and its parent) and retry
        _make_writable(os.path.dirname(path))
        _make_writable(path)
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    with contextlib.suppress(FileNotFoundError):
        if sys.version_info >= (3, 12):
            shutil.rmtree(root, onexc=retry)
        else:
            shutil.rmtree(root, onerror=lambda f, p, e: retry(f, p, e[1]))
    with _lock:
        _live.discard(root)


@atexit.register
def _remove_leftovers() -> None:
    with _lock:
        leftovers = list(_live)
    for root in leftovers:
        remove_root(root)
