"""Cleanup never loses a result: a tree too deep for shutil.rmtree, locked folders,
SIGTERM, and folders left by SIGKILL (swept at the next start). Real processes."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import loopwright as lw
from loopwright.sandboxes import _context, _tempdir
from loopwright.sandboxes._tempdir import OWNER_FILE, sweep_leftovers
from loopwright.tools.builtin import bash

from .conftest import BWRAP_PROBLEM, exists, live_processes

BACKENDS = [
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}"),
    ),
    "local",
]

DEEP_TREE = (
    "python3 -c \"import os\nos.mkdir('locked'); open('locked/f', 'w').close(); "
    "os.chmod('locked', 0)\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')\" && echo made"
)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_tree_too_deep_for_rmtree_does_not_lose_the_result(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if exists("/dev/shm"):  # (a deep tree on a slow disk takes seconds)
        monkeypatch.setattr(tempfile, "tempdir", "/dev/shm")
    roots: list[str] = []

    @lw.tool
    def where() -> str:
        """Say where the sandbox lives on the host."""
        roots.append(lw.sandbox().root)  # type: ignore[attr-defined]
        return "noted"

    model = lw.get_model(
        "mock",
        outputs=[
            lw.ModelOutput.for_tool_call("bash", {"cmd": DEEP_TREE}),
            lw.ModelOutput.for_tool_call("where"),
            lw.ModelOutput.for_tool_call("submit", {"answer": "42"}),
        ],
    )
    agent = lw.react(tools=[bash(), where])
    state = await lw.run(agent, "go", model=model, sandbox=backend)
    assert state.completed == "submit" and state.text == "42"
    tool_results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert tool_results[0].text.strip() == "made", tool_results[0]
    assert len(roots) == 1 and not exists(roots[0])


SCRIPT = """
import asyncio, sys
import loopwright as lw

async def main():
    async with lw.use_sandbox(sys.argv[1]) as sb:
        print(sb.root, flush=True)
        await sb.exec(["sleep", "{marker}"])

asyncio.run(main())
"""


def _start(backend: str, marker: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.replace("{marker}", marker), backend],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    root = proc.stdout.readline().strip()
    assert root and os.path.isdir(root)
    deadline = time.monotonic() + 20
    while not any(p.name() == "sleep" for p in live_processes(marker)):
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.05)
    return proc, root


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigterm_cleans_up_like_sigint(backend: str) -> None:
    marker = f"{time.time_ns() % 10**9 + 10**9}"
    proc, root = _start(backend, marker)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not os.path.lexists(root)
    assert live_processes(marker) == []


def test_folders_left_by_sigkill_are_swept_at_the_next_start() -> None:
    marker = f"{time.time_ns() % 10**9 + 10**9}"
    proc, root = _start("local", marker)
    proc.kill()
    proc.wait(timeout=30)
    assert os.path.isdir(root)  # nothing could clean up
    for p in live_processes(marker):  # (the local backend's command outlived it)
        p.kill()
    # the next process to start a sandbox removes it
    subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("{marker}", "0"), "local"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert not os.path.lexists(root)


def test_the_sweep_spares_live_owners_and_sees_through_pid_reuse() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = _tempdir._start_time(os.getpid())
        boot = _tempdir._boot_id()
        assert started is not None and started.isdigit()
        markers = {
            "loopwright-local-alive": f"{boot} {os.getpid()} {started}",
            "loopwright-local-reused": f"{boot} {os.getpid()} {int(started) - 1}",
            "loopwright-local-rebooted": f"another-boot {os.getpid()} {started}",
            "loopwright-local-unreadable": "garbage",
            "someone-else-s-folder": f"{boot} 999999999 1",
        }
        for name, text in markers.items():
            os.makedirs(os.path.join(tmp, name, "workspace", "deep"))
            with open(os.path.join(tmp, name, OWNER_FILE), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(tmp, "loopwright-sandbox-no-marker-yet"))
        removed = sweep_leftovers(tmp, force=True)
        assert sorted(os.path.basename(r) for r in removed) == [
            "loopwright-local-rebooted",
            "loopwright-local-reused",
        ]
        assert sorted(os.listdir(tmp)) == [
            "loopwright-local-alive",
            "loopwright-local-unreadable",
            "loopwright-sandbox-no-marker-yet",
            "someone-else-s-folder",
        ]


async def test_a_failing_cleanup_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    from .test_lifecycle import HostShell

    class Broken(HostShell):
        async def _cleanup(self) -> None:
            await super()._cleanup()
            raise OSError("the disk went away")

    sb = await Broken.create()
    with caplog.at_level(logging.ERROR, logger="loopwright.sandboxes"):
        async with lw.use_sandbox(sb):  # (installed only: not cleaned up here)
            pass
        await _context._clean_up(sb)
    assert "cleaning up the hostshell sandbox failed" in caplog.text
    assert "the disk went away" in caplog.text
