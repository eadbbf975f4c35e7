"""use_sandbox(): the current sandbox, teardown on every path, the cap, the registry."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any, Self

import pytest

import loopwright as lw
from loopwright.sandboxes import (
    ExecResult,
    SandboxEnvironment,
    SandboxError,
    SandboxLimits,
    _registry,
    max_sandboxes,
    register_sandbox,
    sandbox,
    sandbox_backend,
    sandbox_backends,
    set_max_sandboxes,
    use_sandbox,
)
from loopwright.sandboxes._process import run_process

from .conftest import exists, gone, live_processes, needs_bwrap, wait_for_process


def test_sandbox_outside_a_context_says_what_to_do() -> None:
    with pytest.raises(SandboxError, match="use_sandbox"):
        sandbox()


@needs_bwrap
async def test_use_sandbox_installs_and_cleans_up_on_success() -> None:
    async with use_sandbox() as sb:
        assert sandbox() is sb
        assert sb.name == "bwrap" and sb.isolated
        await sb.write_file("a.txt", "x")
        root = sb.root  # type: ignore[attr-defined]
        assert exists(root)
    assert not exists(root)
    with pytest.raises(SandboxError):
        sandbox()
    with pytest.raises(SandboxError, match="cleaned up"):
        await sb.exec(["true"])


@needs_bwrap
async def test_cleanup_on_error() -> None:
    roots: list[str] = []

    async def fail() -> None:
        async with use_sandbox() as sb:
            roots.append(sb.root)  # type: ignore[attr-defined]
            await sb.exec(["sh", "-c", "mkdir -p d/e; touch d/e/f; chmod 000 d"])
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await fail()
    assert not exists(roots[0])


@needs_bwrap
async def test_cleanup_on_cancel_kills_the_running_command() -> None:
    marker = uuid.uuid4().hex
    roots: list[str] = []

    async def run() -> None:
        async with use_sandbox() as sb:
            roots.append(sb.root)  # type: ignore[attr-defined]
            await sb.exec(["python3", "-c", "import time; time.sleep(60)", marker], timeout=120)

    task = asyncio.ensure_future(run())
    proc = await wait_for_process(marker, "python3")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert gone(proc)
    assert live_processes(marker) == []
    assert not exists(roots[0])


@needs_bwrap
async def test_cleanup_when_a_limit_ends_the_run() -> None:
    roots: list[str] = []

    async def slow() -> None:
        with lw.time_limit(0.5):
            async with use_sandbox() as sb:
                roots.append(sb.root)  # type: ignore[attr-defined]
                await sb.exec(["sleep", "30"], timeout=60)

    with pytest.raises(lw.LimitExceededError):
        await slow()
    assert not exists(roots[0])


async def test_concurrent_sandboxes_are_capped() -> None:
    old = max_sandboxes()
    set_max_sandboxes(2)
    alive = 0
    most = 0

    async def one() -> None:
        nonlocal alive, most
        async with use_sandbox("local") as sb:
            alive += 1
            most = max(most, alive)
            await sb.exec(["sleep", "0.2"])
            alive -= 1

    try:
        await asyncio.gather(*(one() for _ in range(5)))
    finally:
        set_max_sandboxes(old)
    assert most == 2
    with pytest.raises(lw.ConfigurationError):
        set_max_sandboxes(0)


async def test_each_task_sees_its_own_sandbox() -> None:
    async def one(i: int) -> str:
        async with use_sandbox("local") as sb:
            await sb.write_file("id.txt", str(i))
            await asyncio.sleep(0.05)
            return await sandbox().read_file("id.txt")

    assert await asyncio.gather(*(one(i) for i in range(4))) == ["0", "1", "2", "3"]


async def test_an_existing_sandbox_is_installed_but_not_cleaned_up() -> None:
    async with use_sandbox("local") as outer:
        async with use_sandbox(outer) as inner:
            assert inner is outer and sandbox() is outer
        assert (await outer.exec(["echo", "still here"])).stdout == "still here\n"
        with pytest.raises(lw.ConfigurationError):
            async with use_sandbox(outer, limits=SandboxLimits()):
                pass


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(lw.ConfigurationError, match="bwrap") as info:
        sandbox_backend("nosuch")
    assert "local" in str(info.value)


async def test_unknown_backend_option_is_an_error() -> None:
    with pytest.raises(lw.ConfigurationError, match="colour"):
        async with use_sandbox("local", colour="red"):
            pass


class HostShell(SandboxEnvironment):
    """A minimal third-party-style backend: only create/_exec/_cleanup; the file
    operations come from the portable defaults (base64 and sh)."""

    name = "hostshell"
    isolated = False

    def __init__(self, root: str) -> None:
        self.workdir = root
        self.limits = SandboxLimits()

    @classmethod
    async def create(cls, *, limits: SandboxLimits | None = None, **options: Any) -> Self:
        import tempfile

        return cls(tempfile.mkdtemp(prefix="lw-hostshell-"))

    async def _exec(
        self,
        cmd: list[str],
        *,
        input: bytes | None,
        cwd: str,
        env: dict[str, str],
        timeout: float,
    ) -> ExecResult:
        from loopwright.sandboxes._process import kill_group

        raw = await run_process(
            cmd,
            input=input,
            timeout=timeout,
            max_output_bytes=self.limits.max_output_bytes,
            kill_tree=kill_group,
            cwd=cwd,
            env={"PATH": "/usr/bin:/bin", **env},
        )
        return raw.result()

    async def _cleanup(self) -> None:
        import shutil

        shutil.rmtree(self.workdir)


async def test_third_party_backend_by_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_backends", _registry._backends.copy())
    register_sandbox("hostshell", HostShell)
    assert "hostshell" in sandbox_backends()
    async with use_sandbox("hostshell") as sb:
        assert isinstance(sb, HostShell)
        payload = bytes(range(256)) * 10
        await sb.write_file("deep/er/data.bin", payload)
        assert await sb.read_file("deep/er/data.bin", text=False) == payload
        await sb.write_file("t.txt", "héllo")
        assert await sb.read_file("t.txt") == "héllo"
        with pytest.raises(FileNotFoundError):
            await sb.read_file("missing.txt")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("deep")
        workdir = sb.workdir
    assert not exists(workdir)
    with pytest.raises(lw.ConfigurationError):
        register_sandbox("bad", int)  # type: ignore[arg-type]


def test_third_party_backend_by_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    ep = EntryPoint(
        name="plugin-sandbox",
        value=f"{__name__}:HostShell [extra]",  # an entry point with extras
        group=_registry.SANDBOX_ENTRY_POINT_GROUP,
    )
    monkeypatch.setattr(_registry, "_backends", _registry._backends.copy())
    monkeypatch.setattr(
        "importlib.metadata.entry_points",
        lambda group: [ep] if group == _registry.SANDBOX_ENTRY_POINT_GROUP else [],
    )
    assert "plugin-sandbox" in sandbox_backends()
    assert sandbox_backend("plugin-sandbox") is HostShell


async def test_bad_commands_are_configuration_errors() -> None:
    async with use_sandbox("local") as sb:
        bad: Sequence[Any]
        for bad in ("ls -la", [], ["ls", 3]):
            with pytest.raises(lw.ConfigurationError):
                await sb.exec(bad)
        with pytest.raises(lw.ConfigurationError):
            await sb.exec(["true"], env={"A=B": "x"})
        with pytest.raises(lw.ConfigurationError):
            await sb.exec(["true"], timeout=0)
        # a command always ends: no timeout that is not a finite number of seconds (inf
        # was taken as none; 10**400 raised a raw OverflowError)
        for endless in (float("inf"), 10**400, float("nan"), -1.0):
            with pytest.raises(lw.ConfigurationError, match="finite"):
                await sb.exec(["true"], timeout=endless)
        for limit in (float("inf"), 10**400, float("nan")):
            with pytest.raises(ValueError, match="timeout"):
                lw.SandboxLimits(timeout=limit)
        # a working folder no command can start in (it was a raw ValueError or
        # UnicodeEncodeError from the process launch)
        for cwd in ("a\0b", "x\ud800"):
            with pytest.raises(lw.ConfigurationError, match="folder"):
                await sb.exec(["true"], cwd=cwd)


@needs_bwrap
async def test_operations_are_recorded_in_the_transcript() -> None:
    from loopwright.transcripts import SandboxEvent, Transcript, transcript_context

    t = Transcript()
    with transcript_context(t):
        async with use_sandbox() as sb:
            await sb.write_file("f.txt", "data")
            await sb.exec(["cat", "f.txt"])
            await sb.read_file("f.txt")
    events = [e for e in t.events if isinstance(e, SandboxEvent)]
    assert [e.action for e in events] == ["write_file", "exec", "read_file"]
    assert events[1].cmd == ["cat", "f.txt"] and events[1].result == 0
    assert events[1].output == "data"
    assert events[0].file == "/workspace/f.txt" and events[0].input == "data"


async def test_the_bwrap_sandbox_refuses_to_run_as_host_root() -> None:
    from loopwright.sandboxes import SandboxUnavailableError
    from loopwright.sandboxes._bwrap import BwrapSandbox

    # checked before bubblewrap is even looked for: holds on any machine
    with pytest.raises(SandboxUnavailableError, match="must not run as host root"):
        await BwrapSandbox.create(host_uid=0)
