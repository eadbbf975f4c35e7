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
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "KEY_ENV",
    "SIGNATURE",
    "described",
    "key_problem",
    "no_key_here",
    "sign",
    "signed_here",
]

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


def _unsafe(path: Path, info: os.stat_result) -> str | None:
    """Why the file ``info`` describes is not a key only this user could have written."""
    if not stat.S_ISREG(info.st_mode):
        return f"the key file {str(path)!r} is not a plain file"
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        return f"the key file {str(path)!r} is not this user's alone (owner, mode 0600)"
    if info.st_size < 32:
        return f"the key file {str(path)!r} is too short to be a key (damaged?)"
    return _open_folder(path)


def _open_folder(path: Path) -> str | None:
    """Whether others may put a file of theirs at ``path`` (its folder is theirs to write
    too, without the sticky bit)."""
    try:
        folder = os.stat(path.parent)
    except FileNotFoundError:
        return None
    # (a group of the user's own, as with per-user groups, is not others)
    shared = folder.st_mode & 0o002 or (folder.st_mode & 0o020 and folder.st_gid != os.getgid())
    if (shared and not folder.st_mode & stat.S_ISVTX) or folder.st_uid not in (os.getuid(), 0):
        return f"the key's folder {str(path.parent)!r} may be written by others"
    return None


def key_problem() -> str | None:
    """Why this user's key cannot be used (``None``: it can, or is not made yet)."""
    path = _key_path()
    if not path.is_absolute():
        return (
            f"the key file {str(path)!r} is not an absolute path (${KEY_ENV} or "
            "$XDG_CONFIG_HOME must be one)"
        )
    try:  # (not followed if a link: one planted there would let others sign)
        return _unsafe(path, os.lstat(path))
    except FileNotFoundError:
        return _open_folder(path)
    except OSError as ex:
        return f"the key file {str(path)!r} cannot be read ({ex.strerror})"


def _read_key(path: Path) -> bytes | None:
    if key_problem() is not None:
        return None
    try:  # the file opened checked itself: another may have been put there meanwhile
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if _unsafe(path, os.fstat(f.fileno())) is not None:
                return None
            key = f.read(4096).strip()
    except OSError:
        return None
    return key if len(key) >= 32 else None


def _key(create: bool) -> bytes | None:
    """This user's key; made (only this user may read it) when ``create`` and missing."""
    path = _key_path()
    key = _read_key(path)
    if key is not None or not create or key_problem() is not None:
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


def _as_stored(options: dict[str, Any], model: object) -> dict[str, Any]:
    """``options`` as the run store gives them back: JSON (a float that is not finite as
    null) with the secrets learnt redacted (``log/``: ``json_text``, ``sql_params``)."""
    from ..log._outcome import json_text
    from ..log._serialize import sql_params
    from ..model import Model
    from ..model._redact import learn_call_secrets, learn_env_secrets

    learn_env_secrets()  # (as the run's writer does when it opens: before its rows)
    if isinstance(model, Model):  # what its first call learns (an eval's later runs are
        # written after it); a name (--ray) is built by the workers
        learn_call_secrets(model, model.config.extra_body)
    stored: dict[str, Any] = json.loads(sql_params((json_text(options),))[0])
    return stored


def sign(options: dict[str, Any], model: object = None) -> dict[str, Any]:
    """``options`` as the run store will keep them, with their signature by this user's
    key (unsigned if no key can be made: ``runs resume`` then asks for ``--trust``);
    ``model``: the command's model (its secrets learnt first, as its first call would)."""
    key = _key(create=True)
    if key is None:
        import click

        why = key_problem() or f"no key could be made at {str(_key_path())!r}"
        click.echo(f"the run's options are recorded unsigned: {why}", err=True)
        return options
    stored = _as_stored(options, model)
    return {**stored, SIGNATURE: _digest(key, stored)}


def signed_here(options: dict[str, Any]) -> bool:
    """Whether ``options`` (as read back from a run store) carry this user's signature
    of exactly what they hold."""
    given = options.get(SIGNATURE)
    key = _key(create=False)
    if not isinstance(given, str) or key is None:
        return False
    return hmac.compare_digest(given, _digest(key, options))


def no_key_here() -> str | None:
    """What stops this user's signature from being checked, if anything."""
    problem = key_problem()
    if problem is None and not _key_path().exists():
        problem = f"no key of this user's at {str(_key_path())!r}"
    return problem


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
