"""The host folders that back sandboxes: made private, removed on cleanup, at exit, or
at the next start when their process was killed.

Removal never raises: whatever the sandboxed code left (a tree thousands of levels deep,
folders without permissions) it is tried with :func:`shutil.rmtree`, then with an
iterative walk that handles any depth, and what still fails is logged, never raised
over a run's result.

Each folder holds an owner marker (``.owner``: the boot id, the pid and the process
start time, so a reused pid is not mistaken for the owner). A process killed with
SIGKILL cannot clean up; the first sandbox a later process makes sweeps the folders
whose owner is gone (only folders of the same host user, with a marker it wrote).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading

from ._folders import fixed_root, keep_root, removed_root
from ._quota import unmount_inside

__all__ = ["OWNER_FILE", "PREFIXES", "make_root", "remove_root", "sweep_leftovers"]

logger = logging.getLogger("loopwright.sandboxes")

OWNER_FILE = ".owner"
PREFIXES = ("loopwright-sandbox-", "loopwright-local-")
"""The name prefixes of sandbox folders in the temporary folder."""

_live: set[str] = set()
_lock = threading.Lock()
_swept = False


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "?"


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), ``None`` when there
    is no such process or it cannot be known."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # the name may hold spaces and ')'
    return fields[19].decode("ascii") if len(fields) > 19 else None


def _owner_text() -> str:
    return f"{_boot_id()} {os.getpid()} {_start_time(os.getpid()) or '?'}\n"


def _owner_alive(text: str) -> bool:
    """Whether the process an owner marker names still runs (``True`` when unsure)."""
    parts = text.split()
    if len(parts) != 3 or not parts[1].isdigit() or "?" in parts:
        return True
    boot, pid, started = parts
    if boot != _boot_id():
        return False  # written before the last reboot
    return _start_time(int(pid)) == started


def make_root(prefix: str = PREFIXES[0]) -> str:
    """Create a private (0700) host folder for one sandbox, with its owner marker; it is
    removed by :func:`remove_root`, else at exit, else by a later process's sweep. A
    run's sandbox uses its run's folder instead (``_folders.py``), found again when the
    run is resumed."""
    root = fixed_root()  # a run's folder, kept for its resume (_folders.py)
    if root is None:
        sweep_leftovers()
        root = tempfile.mkdtemp(prefix=prefix)
        with _lock:
            _live.add(root)
    if os.geteuid() == 0 and os.lstat(root).st_uid != 0:
        # a run's kept folder an older version handed to the sandbox's user, who may
        # have put links in it: root's again before anything in it is touched
        os.chown(root, 0, os.getegid(), follow_symlinks=False)
        os.chmod(root, 0o700)
    marker = os.path.join(root, OWNER_FILE)
    if os.path.islink(marker):
        os.unlink(marker)
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with open(fd, "w", encoding="ascii") as f:
        f.write(_owner_text())
    return root


def sweep_leftovers(tmp: str | None = None, *, force: bool = False) -> list[str]:
    """Remove the sandbox folders whose owner process is gone (once per process unless
    ``force``); returns the folders removed."""
    global _swept
    with _lock:
        if _swept and not force:
            return []
        _swept = True
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIXES) or not entry.is_dir(follow_symlinks=False):
            continue
        marker = os.path.join(entry.path, OWNER_FILE)
        try:
            st = os.lstat(marker)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue  # not a marker this user wrote
            with open(marker, encoding="ascii", errors="replace") as f:
                text = f.read(200)
        except OSError:
            continue  # no marker (yet): not ours to judge
        if not _owner_alive(text):
            logger.info("removing sandbox folder %s left by a killed process", entry.path)
            if remove_root(entry.path):
                removed.append(entry.path)
    return removed


def _make_writable(path: str) -> None:
    with contextlib.suppress(OSError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode):
            os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU)


def _rmtree(root: str) -> None:
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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_dir(name: str, parent: int | None) -> int:
    """Open a folder (not a link to one), giving it owner permissions if it has none."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        os.chmod(name, stat.S_IRWXU, dir_fd=parent)
        return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _remove_tree(root: str) -> None:
    """Delete ``root`` walking down and up with one open folder at a time: no recursion
    and no path longer than a name, so any depth works in time linear in its size.

    Going up is ``..`` checked against the inode recorded on the way down, so a folder
    moved meanwhile stops the walk instead of leading it outside ``root``.
    """
    fd = _open_dir(root, None)
    path: list[tuple[str, int, int]] = []  # (name, st_dev, st_ino) of each parent
    try:
        while True:
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | stat.S_IRWXU)
            child = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.name, dir_fd=fd)
            if child is not None:
                here = os.fstat(fd)
                sub = _open_dir(child, fd)
                path.append((child, here.st_dev, here.st_ino))
                os.close(fd)
                fd = sub
                continue
            if not path:
                break
            name, dev, ino = path.pop()
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            up = os.fstat(fd)
            if (up.st_dev, up.st_ino) != (dev, ino):
                raise OSError(f"a folder under {root} was moved during its removal")
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(root)


def remove_root(root: str) -> bool:
    """Delete a sandbox folder, whatever the sandboxed code left in it. Never raises:
    a failure is logged. Returns whether the folder is gone."""
    if keep_root(root):  # (with its quota tmpfs still mounted: the files are there)
        logger.info("keeping the sandbox folder %s of a run that did not finish", root)
        return False
    unmount_inside(root)  # (the workspace's quota tmpfs)
    try:
        _rmtree(root)
    except Exception as e:  # e.g. RecursionError on a very deep tree
        logger.info("shutil.rmtree could not remove %s (%r); walking it instead", root, e)
    if os.path.lexists(root):
        try:
            _remove_tree(root)
        except FileNotFoundError:
            pass
        except OSError as e:
            logger.error("could not remove the sandbox folder %s (%s); remove it by hand", root, e)
            return False
    with _lock:
        _live.discard(root)
    removed_root(root)
    return True


@atexit.register
def _remove_leftovers() -> None:
    with _lock:
        leftovers = list(_live)
    for root in leftovers:
        remove_root(root)
