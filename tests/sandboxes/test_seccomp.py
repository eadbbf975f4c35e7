"""The bwrap sandbox's seccomp filter: dangerous system calls fail with EPERM inside,
ordinary programs (threads, subprocesses) still work; without pyseccomp, a warning."""

from __future__ import annotations

import logging
import platform
import sys

import pytest

from loopwright.sandboxes._bwrap import BwrapSandbox
from loopwright.sandboxes._seccomp import seccomp_program

from .conftest import BWRAP_PROBLEM

NUMBERS = {
    "x86_64": {
        "perf_event_open": 298,
        "io_uring_setup": 425,
        "bpf": 321,
        "keyctl": 250,
        "userfaultfd": 323,
        "unshare": 272,
        "ptrace": 101,
    },
    "aarch64": {
        "perf_event_open": 241,
        "io_uring_setup": 425,
        "bpf": 280,
        "keyctl": 219,
        "userfaultfd": 282,
        "unshare": 97,
        "ptrace": 117,
    },
}.get(platform.machine())

PROBE = """
import ctypes, json, os, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, nr in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    out[name] = "EPERM" if r == -1 and ctypes.get_errno() == 1 else f"{r}/{ctypes.get_errno()}"
seen = []
t = threading.Thread(target=seen.append, args=(1,)); t.start(); t.join()
out["thread"] = seen == [1]
out["subprocess"] = subprocess.run(["sh", "-c", "echo ok"], capture_output=True).stdout
out["subprocess"] = out["subprocess"].decode()
print(json.dumps(out))
"""


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")
@pytest.mark.skipif(NUMBERS is None, reason=f"no syscall table for {platform.machine()}")
@pytest.mark.skipif(seccomp_program() is None, reason="pyseccomp/libseccomp missing")
async def test_dangerous_system_calls_fail_with_eperm(sb: BwrapSandbox) -> None:
    import json

    r = await sb.exec(["python3", "-c", PROBE, json.dumps(NUMBERS)])
    assert r.success, r.stderr
    out = json.loads(r.stdout)
    assert {name: out[name] for name in NUMBERS or {}} == dict.fromkeys(NUMBERS or {}, "EPERM")
    assert out["thread"] is True and out["subprocess"] == "ok\n"
    # new namespaces through the tools are refused too; ordinary commands work
    r = await sb.exec(["sh", "-c", "unshare -U true; echo $?; ls / >/dev/null && echo fine"])
    assert r.stdout.split() == ["1", "fine"]


def test_without_pyseccomp_a_warning_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # (import fails)
    with caplog.at_level(logging.WARNING, logger="loopwright.sandboxes"):
        assert seccomp_program.__wrapped__() is None
    assert "WITHOUT a seccomp filter" in caplog.text and "loopwright[sandbox]" in caplog.text
