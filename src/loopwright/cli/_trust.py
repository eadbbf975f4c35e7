"""Whether a run's recorded command options (``metadata["cli"]``, ``_recorded.py``) were
recorded by this user, unchanged: ``loopwright runs resume`` makes an agent again from
them, and they name code to import (``--tool file.py:attr``, an eval's task file), a
model and its arguments (a ``base_url``, ``key=@file`` arguments read from disk), a
sandbox and an approval policy. A run store is data: one copied or imported from
elsewhere, or edited, must not choose what runs here.

``loopwright run`` and ``loopwright eval`` sign the options they record with a key of
this user's (an HMAC-SHA256 of their canonical JSON), kept in a file only this user may
read (``~/.config/loopwright/recorded.key``, made at the first signing;
``$LOOPWRIGHT_KEY_FILE`` names another). ``runs resume`` makes the agent again from options
whose signature matches; any others only with ``--trust``, after saying what they name.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
from pathlib import Path
from typing import Any

__all__ = ["KEY_ENV", "SIGNATURE", "described", "sign", "signed_here"]

KEY_ENV = "LOOPWRIGHT_KEY_FILE"
SIGNATURE = "signature"
"""The key of the recorded options holding their signature."""

_log = logging.getLogger("loopwright.cli")


def _key_path() -> Path:
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "loopwright" / "recorded.key"


def _read_key(path: Path) -> bytes | None:
    try:
        key = path.read_bytes().strip()
    except OSError:
        return None
    return key if len(key) >= 32 else None


def _key(create: bool) -> bytes | None:
    """This user's key; made (only this user may read it) when ``create`` and missing."""
    path = _key_path()
    key = _read_key(path)
    if key is not None or not create:
        return key
    try:  # written whole under another name, then linked: a reader never sees half a key
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
            with contextlib.suppress(FileExistsError):  # (another process made it first)
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as ex:  # (a read-only home: the options are recorded unsigned)
        _log.debug("cannot make the key that signs recorded options at %s: %r", path, ex)
        return None
    return _read_key(path)


def _digest(key: bytes, options: dict[str, Any]) -> str:
    unsigned = {k: v for k, v in options.items() if k != SIGNATURE}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def sign(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with their signature by this user's key (unsigned if no key can be
    made: ``runs resume`` then asks for ``--trust``)."""
    key = _key(create=True)
    return options if key is None else {**options, SIGNATURE: _digest(key, options)}


def signed_here(options: dict[str, Any]) -> bool:
    """Whether ``options`` (as read back from a run store) carry this user's signature
    of exactly what they hold."""
    given = options.get(SIGNATURE)
    key = _key(create=False)
    if not isinstance(given, str) or key is None:
        return False
    return hmac.compare_digest(given, _digest(key, options))


def described(options: dict[str, Any]) -> str:
    """What making the agent again from ``options`` would use, one item a line."""
    from .._terminal import visible

    def shown(value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return visible(text if len(text) <= 300 else text[:300] + "...")

    names = ("command", "model", "model_args", "tools", "tasks", "task_args", "sandbox")
    lines = [f"  {n}: {shown(options[n])}" for n in names if options.get(n)]
    if options.get("command") == "run":
        approval = options.get("approval") or "none (every call runs)"
        lines.append(f"  approval: {shown(approval)}")
    if options.get("system"):
        lines.append(f"  system prompt: {shown(options['system'])}")
    return "\n".join(lines)
