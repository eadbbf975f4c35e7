"""A run's sandbox folder, kept by run id so that a resumed run finds it again.

The sandbox a run starts (``run(..., sandbox="bwrap")``, a run recorded in a run store;
an eval sample's, in ``RUN_ID/SAMPLE_KEY/``) does not live in a fresh temporary folder
but in the run's folder,
``/var/tmp/loopwright-sandboxes-UID/STORE/RUN_ID/`` (``$LOOPWRIGHT_SANDBOXES`` instead of
the first part when set; ``STORE`` is a digest of the run store file's path; ``/var/tmp``
survives a restart of the machine, and a bwrap sandbox's unprivileged user can reach
it); its ``workspace/`` is the sandbox's working folder. When the run finishes
(success, a limit, stopped) the folder is removed with the sandbox, as a temporary one
is. When it ends otherwise — cancelled, an error, its process killed — the folder stays,
and ``lw.resume`` (``loopwright runs resume``) starts the sandbox on it again: the files
the run made are there (an eval sample in flight that goes on in the resumed eval's run
takes its folder along: :func:`adopt_folder`). :func:`prune_folders` (``loopwright runs
prune``) removes the folders of a store's runs that finished or are no longer in it.

A workspace with a disk quota (``SandboxLimits.disk_bytes``: a tmpfs mounted on it, as
bwrap sandboxes have when loopwright runs as root) stays mounted while its run's folder is
kept, and is found mounted again on resume: its files outlive the process (killed or
not), not a restart of the machine. Removing the folder unmounts it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

__all__ = [
    "SANDBOXES_ENV",
    "adopt_folder",
    "fixed_root",
    "folders_dir",
    "keep_root",
    "prune_folders",
    "release_root",
    "removed_root",
    "run_folder",
    "sandbox_folder",
]

SANDBOXES_ENV = "LOOPWRIGHT_SANDBOXES"
"""Where runs' sandbox folders go (default: ``/var/tmp/loopwright-sandboxes-UID``)."""

_next: ContextVar[str | None] = ContextVar("loopwright_sandbox_folder", default=None)
_kept: set[str] = set()  # run folders whose sandbox's cleanup leaves them
_made: set[str] = set()  # every run folder made here
_lock = threading.Lock()


def folders_dir(db_path: str | os.PathLike[str]) -> Path:
    """The folder holding the sandbox folders of the runs of the run store ``db_path``."""
    env = os.environ.get(SANDBOXES_ENV)
    if env:
        base = Path(env)
    else:
        tmp = "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()
        base = Path(tmp) / f"loopwright-sandboxes-{os.geteuid()}"
    store = hashlib.sha256(os.fsencode(os.path.abspath(db_path))).hexdigest()[:16]
    return base / store


def run_folder(db_path: str | os.PathLike[str], run_id: str, sample: str | None = None) -> Path:
    """The sandbox folder of run ``run_id`` of the run store ``db_path`` (with ``sample``,
    of that sample of it: ``RUN_ID/SAMPLE_KEY``)."""
    for name in (run_id, sample) if sample is not None else (run_id,):
        if not name or os.sep in name or name.startswith("."):
            raise ValueError(f"not an id: {name!r}")
    folder = folders_dir(db_path) / run_id
    return folder / sample if sample is not None else folder


def adopt_folder(old: str | os.PathLike[str], new: str | os.PathLike[str]) -> bool:
    """Move a sample's kept folder (``old``) to where the sample goes on (``new``: its
    key in the resumed eval's run); whether there was one."""
    if not os.path.isdir(old) or os.path.islink(old):
        return False
    parent = os.path.dirname(os.fspath(new))
    os.makedirs(os.path.dirname(parent), 0o711, exist_ok=True)
    _own_folder(parent, 0o711)
    os.rename(old, new)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(os.fspath(old)))  # (the old run's, when now empty)
    return True


def _own_folder(path: str, mode: int, *, mine: bool = True) -> None:
    """Make ``path`` unless it exists: a folder, not a link, and (``mine``) of this
    user's: another user could have made it first in a shared folder. (A run's own
    folder, in its store's folder of this user's that no one else may write, may belong
    to the sandbox's unprivileged user: a bwrap sandbox's does.)"""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or (mine and st.st_uid != os.geteuid()):
        raise PermissionError(f"{path} is not a folder of this user's: refusing to use it")


@contextlib.contextmanager
def sandbox_folder(folder: str | os.PathLike[str] | None) -> Iterator[None]:
    """The sandbox started in this block (one: the run's) is made in ``folder``, kept
    there until :func:`release_root` (see the module's documentation); ``None``: in a
    temporary folder (a backend's probe, made while the run's sandbox starts)."""
    token = _next.set(os.fspath(folder) if folder is not None else None)
    try:
        yield
    finally:
        _next.reset(token)


def fixed_root() -> str | None:
    """The folder the sandbox being made must use, made (or found again) and marked
    kept; ``None``: a temporary folder."""
    folder = _next.get()
    if folder is None:
        return None
    store = os.path.dirname(folder)
    for attempt in (1, 2, 3):  # (another run's removal may take an empty parent away)
        try:
            os.makedirs(os.path.dirname(store), 0o711, exist_ok=True)
            _own_folder(os.path.dirname(store), 0o711)  # (others may pass, not list)
            _own_folder(store, 0o711)
            _own_folder(folder, 0o700, mine=False)
            break
        except FileNotFoundError:
            if attempt == 3:
                raise
    with _lock:
        _kept.add(folder)
        _made.add(folder)
    return folder


def removed_root(root: str) -> None:
    """A sandbox folder was removed: a run's leaves no empty folder of its store."""
    with _lock:
        if root not in _made:
            return
        _made.discard(root)
    parent = os.path.dirname(root)
    with contextlib.suppress(OSError):  # (the run's, for a sample's; the store's)
        os.rmdir(parent)
        os.rmdir(os.path.dirname(parent))


def keep_root(root: str) -> bool:
    """Whether ``root`` is a run's folder that its sandbox's cleanup must leave."""
    with _lock:
        return root in _kept


def release_root(root: str | os.PathLike[str]) -> None:
    """The run finished: its sandbox's cleanup removes its folder."""
    with _lock:
        _kept.discard(os.fspath(root))


def prune_folders(
    db_path: str | os.PathLike[str], keep: Callable[[str], bool], remove: Callable[[str], bool]
) -> list[str]:
    """Remove the run folders of ``db_path``'s store for which ``keep(run_id)`` is false
    (with ``remove``: the sandboxes' own removal, which never raises); returns them."""
    base = folders_dir(db_path)
    removed = []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and not keep(entry.name) and remove(entry.path):
            removed.append(entry.path)
    return removed
