"""Which memory cgroup a sandbox gets, on hierarchies laid out in a temporary folder like
``/sys/fs/cgroup``: cgroup v2 where loopwright's cgroup delegates the memory controller
(this machine may have v1 only), else v1, else none (a note). The kernel's side (the
control files a new group has, the limit enforced) is not there: what is checked is
which group is made where, and what is written to it."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopwright.sandboxes import _cgroup
from loopwright.sandboxes._cgroup import memory_group

OWN = "/app.slice/worker.service"
MiB = 1024 * 1024


def _layout(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    v2_memory: bool | None,
    v1: bool,
) -> tuple[Path, Path]:
    """A cgroup root with, for this process, a v2 cgroup ``OWN`` (``v2_memory``: whether
    it delegates memory; ``None``: no v2 hierarchy) and a v1 memory cgroup (``v1``).
    Returns the v2 and v1 folders of this process's cgroups."""
    root = tmp_path / "cgroup"
    v2_own, v1_own = root / OWN.lstrip("/"), root / "memory" / OWN.lstrip("/")
    lines = ["9:name=systemd:" + OWN]
    if v2_memory is not None:
        v2_own.mkdir(parents=True)
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (v2_own / "cgroup.subtree_control").write_text("cpu memory\n" if v2_memory else "cpu\n")
        lines.append("0::" + OWN)
    if v1:
        v1_own.mkdir(parents=True)
        (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        lines.insert(0, "4:memory:" + OWN)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(_cgroup, "_CGROUP_ROOT", str(root))
    monkeypatch.setattr(_cgroup, "_PROC_CGROUP", str(proc))
    monkeypatch.setattr(_cgroup, "_swept", set())
    monkeypatch.setattr(_cgroup, "_noted", False)
    # as the kernel does, a new group has its control files at once
    real_mkdir: Callable[..., None] = os.mkdir

    def mkdir(path: Any, mode: int = 0o777, **kwargs: Any) -> None:
        real_mkdir(path, mode, **kwargs)
        if os.path.basename(path).startswith(f"loopwright-{os.getpid()}-"):
            for name in ("cgroup.procs", "tasks") if v1 else ("cgroup.procs",):
                Path(path, name).touch()

    monkeypatch.setattr(os, "mkdir", mkdir)
    return v2_own, v1_own


def _read(path: Path) -> str:
    return path.read_text().strip()


def test_v2_where_loopwrights_cgroup_delegates_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v2_own, v1_own = _layout(tmp_path, monkeypatch, v2_memory=True, v1=True)
    group = memory_group(64 * MiB, 65534, 65533)
    assert group is not None
    path = Path(group.path)
    # inside loopwright's own cgroup, named by its pid (for the sweep)
    assert path.parent == v2_own and path.name.startswith(f"loopwright-{os.getpid()}-")
    assert _read(path / "memory.max") == str(64 * MiB)
    assert _read(path / "memory.swap.max") == "0"  # (no way around the cap through swap)
    assert not (path / "memory.limit_in_bytes").exists() and list(v1_own.iterdir()) == []
    # the user bubblewrap runs as may move a command into it
    procs = os.stat(path / "cgroup.procs")
    if os.geteuid() == 0:
        assert (procs.st_uid, procs.st_gid) == (65534, 65533)
    assert group.procs == str(path / "cgroup.procs")
    (path / "memory.peak").write_text("12345\n")
    assert group.peak_bytes() == 12345


def test_v1_where_v2_does_not_delegate_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a hybrid machine (v2 mounted, controllers on v1) like this one, or a v2 cgroup
    # that keeps memory to itself
    v2_own, v1_own = _layout(tmp_path, monkeypatch, v2_memory=False, v1=True)
    group = memory_group(64 * MiB, 65534, 65534)
    assert group is not None
    path = Path(group.path)
    assert path.parent == v1_own
    assert _read(path / "memory.limit_in_bytes") == str(64 * MiB)
    assert _read(path / "memory.memsw.limit_in_bytes") == str(64 * MiB)
    assert not (path / "memory.max").exists()
    assert [p.name for p in v2_own.iterdir()] == ["cgroup.subtree_control"]


@pytest.mark.parametrize("v2_memory", [False, None])
def test_no_group_and_a_note_where_neither_can_be_used(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    v2_memory: bool | None,
) -> None:
    _layout(tmp_path, monkeypatch, v2_memory=v2_memory, v1=False)
    with caplog.at_level(logging.INFO, logger="loopwright.sandboxes"):
        assert memory_group(64 * MiB, 65534, 65534) is None
    assert "no total memory cap" in caplog.text and "no memory cgroup controller" in caplog.text


def test_v2_groups_of_a_killed_process_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    dead = int(done.stdout)  # (its pid is free again: reused within this test, unlikely)
    v2_own, _ = _layout(tmp_path, monkeypatch, v2_memory=True, v1=False)
    for name in (f"loopwright-{dead}-1", f"loopwright-{os.getppid()}-1", "other-1"):
        (v2_own / name).mkdir()
    group = memory_group(64 * MiB, 65534, 65534)
    assert group is not None
    names = sorted(p.name for p in v2_own.iterdir() if p.is_dir())
    assert names == sorted([f"loopwright-{os.getppid()}-1", "other-1", Path(group.path).name])
