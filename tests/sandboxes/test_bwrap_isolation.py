"""Escape attempts from inside the bwrap sandbox: every one must fail (real processes)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from pathlib import Path

import psutil
import pytest

from loopwright.sandboxes import ExecTimeoutError, SandboxError, SandboxLimits
from loopwright.sandboxes._bwrap import BwrapSandbox

from .conftest import (
    exists,
    gone,
    host_read,
    host_stat,
    live_processes,
    needs_bwrap,
    wait_for_process,
)

pytestmark = needs_bwrap  # every test here needs bubblewrap (setup.sh allows it missing)

PROJECT = Path(__file__).resolve().parents[2]

CONNECT = """
import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
except OSError as e:
    print("failed:", type(e).__name__, e)
    sys.exit(3)
print("connected")
"""


async def test_loopback_of_the_host_is_unreachable(sb: BwrapSandbox) -> None:
    hits: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(1)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        # the host itself can connect: the server is real
        _, w = await asyncio.open_connection("127.0.0.1", port)
        w.close()
        await asyncio.sleep(0.05)
        assert hits == [1]
        r = await sb.exec(["python3", "-c", CONNECT, "127.0.0.1", str(port)])
    assert r.returncode == 3, r
    assert "failed" in r.stdout
    assert hits == [1]  # the sandbox never reached it


async def test_outside_addresses_and_dns_are_unreachable(sb: BwrapSandbox) -> None:
    r = await sb.exec(["python3", "-c", CONNECT, "1.1.1.1", "443"])
    assert r.returncode == 3 and "failed" in r.stdout, r
    dns = await sb.exec(["python3", "-c", "import socket; socket.gethostbyname('example.com')"])
    assert not dns.success
    # only the loopback interface exists
    devices = await sb.exec(["cat", "/proc/net/dev"])
    names = {line.split(":")[0].strip() for line in devices.stdout.splitlines()[2:]}
    assert names == {"lo"}


@pytest.mark.parametrize("path", ["/etc/x", "/usr/x", "/x", "/dev/x", "/bin/x", "/proc/x"])
async def test_writing_outside_the_workspace_fails(sb: BwrapSandbox, path: str) -> None:
    r = await sb.exec(["sh", "-c", f"echo pwned > {path}"])
    assert not r.success
    with pytest.raises(PermissionError):
        await sb.write_file(path, "pwned")
    assert not exists(path)  # (on the host)


async def test_workspace_persists_and_tmp_is_private_per_command(sb: BwrapSandbox) -> None:
    assert (await sb.exec(["sh", "-c", "echo kept > kept.txt; echo gone > /tmp/t"])).success
    assert (await sb.exec(["cat", "kept.txt"])).stdout == "kept\n"
    assert not (await sb.exec(["cat", "/tmp/t"])).success
    # the workspace is the host folder behind the sandbox, owned by the sandbox user
    host_file = os.path.join(sb.root, "workspace", "kept.txt")
    assert host_read(host_file) == "kept\n"
    assert host_stat(host_file).st_uid != 0


async def test_host_private_folders_are_invisible(sb: BwrapSandbox) -> None:
    for path in ["/root", "/home", str(PROJECT), "/work", "/opt", "/var", sb.root]:
        r = await sb.exec(["ls", "-a", path])
        assert not r.success, f"{path} is visible: {r.stdout}"
    top = (await sb.exec(["ls", "/"])).stdout.split()
    assert set(top) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin"} | {
        "tmp",
        "usr",
        "workspace",
    }
    etc = set((await sb.exec(["ls", "/etc"])).stdout.split())
    assert "shadow" not in etc and "ssh" not in etc
    assert "passwd" in etc


async def test_runs_unprivileged_with_own_pid_namespace_and_hostname(sb: BwrapSandbox) -> None:
    r = await sb.exec(["sh", "-c", "id -u; hostname; ls /proc | grep -c '^[0-9]'"])
    uid, hostname, nprocs = r.stdout.split()
    assert uid == "1000"
    assert hostname == "sandbox"
    assert int(nprocs) < 10  # the host's processes are not visible
    marker = uuid.uuid4().hex
    task = asyncio.ensure_future(
        sb.exec(["python3", "-c", "import time; time.sleep(30)", marker], timeout=60)
    )
    try:
        proc = await wait_for_process(marker, "python3")
        assert proc.uids().real != 0  # never host root
        assert proc.uids().effective != 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await asyncio.sleep(0.2)
    assert gone(proc)


async def test_nested_user_namespaces_and_privileges_are_denied(sb: BwrapSandbox) -> None:
    r = await sb.exec(["unshare", "-Ur", "true"])
    assert not r.success
    caps = await sb.exec(["grep", "CapEff", "/proc/self/status"])
    assert caps.stdout.split()[1] == "0000000000000000"


async def test_environment_is_cleared(sb: BwrapSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_TEST_SECRET", "hunter2")
    r = await sb.exec(["env"], env={"EXTRA": "1"})
    names = {line.split("=", 1)[0] for line in r.stdout.splitlines()}
    assert "LOOPWRIGHT_TEST_SECRET" not in names
    assert "hunter2" not in r.stdout
    assert names <= {"PATH", "HOME", "USER", "LANG", "TMPDIR", "TERM", "EXTRA", "PWD"}


async def test_fork_bomb_is_contained() -> None:
    limits = SandboxLimits(max_processes=64)
    env = await BwrapSandbox.create(limits=limits)
    try:
        # count how many processes it gets before fork fails
        counter = (
            "import os, time\n"
            "n = 0\n"
            "try:\n"
            "    while True:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(20); os._exit(0)\n"
            "        n += 1\n"
            "except OSError as e:\n"
            "    print(n, e.errno)\n"
        )
        r = await env.exec(["python3", "-c", counter], timeout=60)
        n, errno = r.stdout.split()
        assert int(n) < 64
        assert errno == "11"  # EAGAIN: the process limit
        # the classic shell bomb ends at the timeout, and takes nothing with it
        marker = uuid.uuid4().hex
        bomb = f": {marker}; b() {{ b | b & }}; b; sleep 60"
        task = asyncio.ensure_future(env.exec(["bash", "-c", bomb], timeout=4))
        await asyncio.sleep(2)
        # bash children keep the command line: at most the limit, plus the two bwraps
        assert 0 < len(live_processes(marker)) <= 64 + 2
        with pytest.raises(ExecTimeoutError):
            await task
        await asyncio.sleep(0.5)
        assert live_processes(marker) == []
        # and the sandbox (and the host) can still run commands
        assert (await env.exec(["echo", "alive"])).stdout == "alive\n"
    finally:
        await env.cleanup()


async def test_large_allocation_fails(sb: BwrapSandbox) -> None:
    r = await sb.exec(["python3", "-c", "b = bytearray(2 * 1024**3)"])
    assert not r.success
    assert "MemoryError" in r.stderr


async def test_infinite_loop_is_killed_at_timeout_with_no_process_left(sb: BwrapSandbox) -> None:
    marker = uuid.uuid4().hex
    loop = "import os\nwhile True: pass"
    task = asyncio.ensure_future(sb.exec(["python3", "-c", loop, marker], timeout=2))
    proc = await wait_for_process(marker, "python3")
    assert proc.is_running() and not gone(proc)  # the check below can fail
    with pytest.raises(ExecTimeoutError) as info:
        await task
    assert info.value.timeout == 2
    assert info.value.result.returncode < 0
    await asyncio.sleep(0.2)
    assert gone(proc)
    assert live_processes(marker) == []


async def test_background_processes_die_with_the_command(sb: BwrapSandbox) -> None:
    marker = uuid.uuid4().hex
    r = await sb.exec(["sh", "-c", f"(sleep 60; : {marker}) & echo started"])
    assert r.stdout == "started\n"
    await asyncio.sleep(0.3)
    assert live_processes(marker) == []


@pytest.mark.parametrize("timeout", [None, 1.0])
async def test_a_daemon_dies_with_the_command(sb: BwrapSandbox, timeout: float | None) -> None:
    marker = str(uuid.uuid4().int % 10**8 + 10**8)
    daemon = f"setsid -f sleep {marker} </dev/null >/dev/null 2>&1"
    if timeout is None:
        assert (await sb.exec(["sh", "-c", daemon])).success
    else:
        with pytest.raises(ExecTimeoutError):
            await sb.exec(["sh", "-c", f"{daemon}; sleep 30"], timeout=timeout)
    for _ in range(100):
        if not live_processes(marker):
            break
        await asyncio.sleep(0.05)
    assert live_processes(marker) == []


async def test_output_is_capped_and_flagged() -> None:
    env = await BwrapSandbox.create(limits=SandboxLimits(max_output_bytes=100_000))
    try:
        r = await env.exec(["yes"], timeout=60)
        assert r.truncated
        assert len(r.stdout) == 100_000
        assert r.stdout.startswith("y\ny\n")
        err = await env.exec(["sh", "-c", "yes >&2"], timeout=60)
        assert err.truncated and len(err.stderr) == 100_000 and err.stdout == ""
        small = await env.exec(["echo", "hi"])
        assert not small.truncated
    finally:
        await env.cleanup()


async def test_five_megabytes_of_stdin(sb: BwrapSandbox) -> None:
    data = os.urandom(5 * 1024 * 1024)
    r = await sb.exec(["sha256sum"], input=data)
    assert r.success
    assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()


async def test_fifty_concurrent_execs_complete(sb: BwrapSandbox) -> None:
    results = await asyncio.gather(
        *(sb.exec(["python3", "-c", f"print({i} * {i})"], timeout=120) for i in range(50))
    )
    assert [r.stdout.strip() for r in results] == [str(i * i) for i in range(50)]
    assert all(r.success for r in results)


async def test_file_size_and_cpu_limits() -> None:
    limits = SandboxLimits(max_file_bytes=1024 * 1024, cpu_seconds=1)
    env = await BwrapSandbox.create(limits=limits)
    try:
        big = await env.exec(["sh", "-c", "head -c 2000000 /dev/zero > big"])
        assert not big.success
        assert "File size limit exceeded" in big.stderr
        assert host_stat(os.path.join(env.root, "workspace", "big")).st_size <= 1024 * 1024
        with pytest.raises(SandboxError, match="file size limit"):
            await env.write_file("big2", b"x" * 2_000_000)
        spin = await env.exec(["python3", "-c", "while True: pass"], timeout=60)
        assert not spin.success  # killed by the CPU limit long before the timeout
    finally:
        await env.cleanup()


async def test_symlinks_cannot_reach_host_files(sb: BwrapSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    assert (await sb.exec(["ln", "-s", str(secret), "link"])).success
    with pytest.raises(FileNotFoundError):
        await sb.read_file("link")
    assert not (await sb.exec(["cat", "link"])).success


async def test_host_uid_is_unprivileged_when_root() -> None:
    env = await BwrapSandbox.create()
    try:
        if os.geteuid() == 0:
            assert env.host_uid == 65534
        else:
            assert env.host_uid == os.geteuid()
        assert psutil.Process().uids().real == os.getuid()  # we did not change ourselves
    finally:
        await env.cleanup()
