"""A bwrap command's private /tmp and /dev/shm hold a bounded number of files
(``SandboxLimits.tmp_files``; as root: tmpfs mounts of the host, one per command), so
millions of empty files cannot exhaust the host's kernel memory; past the bound making a
file is an ordinary failure of the command. Real sandboxed processes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import loopwright as lw
from loopwright.sandboxes import SandboxLimits, _scratch, use_sandbox
from loopwright.sandboxes._bwrap import BwrapSandbox
from loopwright.sandboxes._scratch import PREFIX, forget_scratch, mount_scratch
from loopwright.tools.builtin import bash

from .conftest import BWRAP_PROBLEM, exists

needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the bound on files needs root")
BOUND = 400


def _mounts() -> str:
    with open("/proc/self/mounts", encoding="utf-8") as f:
        return f.read()


def _scratch_left(root: str) -> list[str]:
    """The command mounts left in a sandbox folder."""
    return [line for line in _mounts().splitlines() if f"{root}/{PREFIX}" in line]


def _points(root: str) -> list[str]:
    """The mount points in a sandbox folder (reused by the next commands)."""
    return [name for name in os.listdir(root) if name.startswith(PREFIX)]


def _flood(folder: str) -> str:
    # make empty files (no byte of the size limit each) until it fails
    return (
        f"i=0; while [ $i -lt {2 * BOUND} ]; do "
        f'true > {folder}/f$i || {{ echo "made $i"; exit 3; }}; i=$((i + 1)); done; '
        f'echo "made all $i"'
    )


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
@needs_bwrap
@needs_root
async def test_a_command_cannot_make_more_files_than_the_bound(folder: str) -> None:
    limits = SandboxLimits(tmp_files=BOUND, memory_total_bytes=None, timeout=60)
    sb = await BwrapSandbox.create(limits=limits)
    try:
        r = await sb.exec(["sh", "-c", _flood(folder)])
        assert r.returncode == 3, r
        assert "No space left on device" in r.stderr
        made = int(r.stdout.split()[1])
        assert BOUND - 10 <= made < BOUND  # (the folder itself is one of them)
        # the host: nothing of the command is left mounted or in the sandbox's folder
        assert _scratch_left(sb.root) == []
        # the next command has a fresh, empty one with the same bound, on the same
        # mount points
        points = _points(sb.root)
        r = await sb.exec(["sh", "-c", f"ls -A {folder} | wc -l; " + _flood(folder)])
        assert r.stdout.split()[0] == "0" and int(r.stdout.split()[2]) == made, r
        assert _points(sb.root) == points and len(points) == 2
        assert _scratch_left(sb.root) == []
    finally:
        await sb.cleanup()
    assert not exists(sb.root)


@needs_bwrap
@needs_root
async def test_the_default_bound_applies_to_both() -> None:
    async with use_sandbox("bwrap") as sb:
        r = await sb.exec(["sh", "-c", "grep -E ' (/tmp|/dev/shm) ' /proc/mounts"])
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r
    default = SandboxLimits().tmp_files
    assert all(f"nr_inodes={default}," in line and "nosuid,nodev" in line for line in lines)


@needs_bwrap
@needs_root
async def test_hitting_the_bound_is_told_to_the_model_like_any_failure() -> None:
    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("bash", {"cmd": _flood("/tmp")}),
            lw.ModelOutput.for_tool_call("submit", {"answer": "done"}),
        ],
    )
    limits = SandboxLimits(tmp_files=BOUND, memory_total_bytes=None)
    async with use_sandbox("bwrap", limits=limits):
        state = await lw.run(lw.react(tools=[bash()]), "go", model=model)
    assert state.completed == "submit"
    [told] = [m.text for m in state.messages if isinstance(m, lw.ToolMessage)][:1]
    assert "No space left on device" in told and "exit code 3" in told, told


@pytest.mark.parametrize(
    "bad", [0, -1, float("inf"), float("nan"), 2**33, 10**400, 1.5, "many", None]
)
def test_a_bad_bound_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="tmp_files"):
        SandboxLimits(tmp_files=bad)  # type: ignore[arg-type]


@needs_bwrap
@needs_root
def test_mounts_a_killed_process_left_are_removed_on_restart(tmp_path: Path) -> None:
    # a run's kept folder, found again by its resumed run: the command mounts of the
    # killed process are still there
    scratch = mount_scratch(str(tmp_path), SandboxLimits(tmp_files=BOUND), 65534, 65534)
    assert scratch.tmp is not None and scratch.shm is not None
    assert len(_scratch_left(str(tmp_path))) == 2
    forget_scratch(str(tmp_path))
    assert _scratch_left(str(tmp_path)) == [] and _points(str(tmp_path)) == []


def test_without_root_a_note_says_there_is_no_bound(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setattr(_scratch, "_noted", False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with caplog.at_level(logging.INFO, logger="loopwright.sandboxes"):
        scratch = mount_scratch(str(tmp_path), SandboxLimits(), 1000, 1000)
    assert scratch.tmp is None and scratch.shm is None and os.listdir(tmp_path) == []
    assert "no bound on their number of files" in caplog.text and "root" in caplog.text
    # bubblewrap's own tmpfs, with a size
    args = scratch.args(SandboxLimits(tmp_bytes=1 << 20))
    assert args[args.index("/tmp") - 3 : args.index("/tmp") + 1] == [
        "--size",
        str(1 << 20),
        "--tmpfs",
        "/tmp",
    ]


def _swap_for_link(path: str, target: Path) -> None:
    """What a host process of the sandbox's user could do: the sandbox's folder is
    theirs (chowned to it), so they may replace a mount point by a link."""
    os.rmdir(path)
    os.symlink(target, path)


@needs_root
def test_a_mount_point_swapped_for_a_link_mounts_nothing_where_it_points(tmp_path: Path) -> None:
    # the mount points are reused: between two commands one is replaced by a link to a
    # host folder; loopwright (root) must not mount a tmpfs of the sandbox's user there
    root, victim = tmp_path / "box", tmp_path / "victim"
    root.mkdir()
    victim.mkdir()
    (victim / "keep").write_text("host file")
    free: list[str] = []
    limits = SandboxLimits(tmp_files=BOUND)
    first = mount_scratch(str(root), limits, 65534, 65534, free)
    first.remove()
    assert len(free) == 2
    for path in free:
        _swap_for_link(path, victim)
    second = mount_scratch(str(root), limits, 65534, 65534, free)
    try:
        assert second.tmp is not None and second.shm is not None
        assert not os.path.ismount(victim) and (victim / "keep").exists()
        for path in (second.tmp, second.shm):
            assert os.path.ismount(path) and not os.path.islink(path)
    finally:
        second.remove()
    assert not os.path.ismount(victim)


@needs_root
def test_forgetting_mounts_never_unmounts_where_a_link_points(tmp_path: Path) -> None:
    # a resumed run's folder holding a link named like a mount point, to a host mount:
    # the host's mount stays
    root, victim = tmp_path / "box", tmp_path / "victim"
    root.mkdir()
    victim.mkdir()
    mounted = mount_scratch(str(victim), SandboxLimits(tmp_files=BOUND), 65534, 65534)
    assert mounted.tmp is not None
    try:
        os.symlink(mounted.tmp, root / f"{PREFIX}evil")
        forget_scratch(str(root))
        assert os.path.ismount(mounted.tmp)
    finally:
        mounted.remove()
