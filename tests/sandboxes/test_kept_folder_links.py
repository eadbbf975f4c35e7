"""A run's kept sandbox folder, found again by its resumed run, may hold links another
process of the sandbox's user made while it waited (as root, the folder was handed to
that user): starting on it, loopwright (root) follows none of them, and the folder is
root's again, others may only pass through it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loopwright.sandboxes._bwrap import NOBODY, _make_sandbox_root
from loopwright.sandboxes._folders import release_root, sandbox_folder
from loopwright.sandboxes._tempdir import OWNER_FILE, remove_root

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the folder is handed over as root")


@needs_root
def test_a_kept_folders_links_are_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "host-etc"
    victim.mkdir()
    (victim / "passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    marker_target = tmp_path / "host-file"
    marker_target.write_text("keep me\n")
    folder = tmp_path / "store" / "runs" / "r1"
    folder.parent.mkdir(parents=True, mode=0o711)
    folder.mkdir(mode=0o700)
    # as an earlier version left it: the sandbox's user's, holding links it made
    os.chown(folder, NOBODY, NOBODY)
    os.symlink(victim, folder / "etc")
    os.symlink(victim, folder / "workspace")
    os.symlink(marker_target, folder / OWNER_FILE)
    with sandbox_folder(folder):
        root = _make_sandbox_root(NOBODY, NOBODY)
    try:
        assert root == str(folder)
        assert (victim / "passwd").read_text() == "root:x:0:0::/root:/bin/bash\n"
        assert sorted(os.listdir(victim)) == ["passwd"]
        assert marker_target.read_text() == "keep me\n"
        assert victim.stat().st_uid == 0
        st = os.lstat(folder)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o711)  # (passed, not written)
        for name in ("etc", "workspace"):
            assert stat.S_ISDIR(os.lstat(folder / name).st_mode)
        assert os.lstat(folder / "workspace").st_uid == NOBODY
    finally:
        release_root(root)
        remove_root(root)
