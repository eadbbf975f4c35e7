"""Files with odd names (newlines, escapes, a leading dash, glob characters) are written
and read back as named, and a write past the file size limit leaves the file as it was,
in both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from loopwright.sandboxes import SandboxEnvironment, SandboxError, SandboxLimits, use_sandbox

from .conftest import BWRAP_PROBLEM

NAMES = [
    "folder ending in a newline\n/file",
    "new\nline/\n",
    "-n/-e",
    "\x1b[31mred\x1b[0m/*?[a]",
    "spaces  /  and  tabs\t",
]


@pytest.fixture(params=["bwrap", "local"])
async def sb(request: pytest.FixtureRequest) -> AsyncIterator[SandboxEnvironment]:
    if request.param == "bwrap" and BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    async with use_sandbox(
        request.param, limits=SandboxLimits(timeout=30, max_file_bytes=1 << 20)
    ) as env:
        yield env


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_odd_names_are_written_and_read_back(sb: SandboxEnvironment, name: str) -> None:
    # (a folder whose name ends in a newline lost it in `$(dirname ...)`: the write
    # failed as "The sandbox may not write" there)
    await sb.write_file(name, f"text of {name!r}")
    assert await sb.read_file(name) == f"text of {name!r}"
    listed = await sb.exec(["ls", "-a", "--", sb.resolve(name.rsplit("/", 1)[0])])
    assert name.rsplit("/", 1)[1] in listed.stdout.split("\n") or name.endswith("\n")


@pytest.mark.filterwarnings("ignore::loopwright.sandboxes.UnisolatedSandboxWarning")
async def test_a_write_past_the_file_size_limit_changes_nothing(sb: SandboxEnvironment) -> None:
    # bwrap's `cat > file` truncated the file, then died of SIGXFSZ at the limit: the
    # old text was gone and max_file_bytes of the new one took its place (and quota)
    limit = sb.limits.max_file_bytes
    assert limit is not None
    await sb.write_file("kept.txt", "the old text")
    with pytest.raises(SandboxError, match="file size limit"):
        await sb.write_file("kept.txt", "x" * (limit + 1))
    with pytest.raises(SandboxError, match="file size limit"):
        await sb.write_file("new.txt", b"x" * (limit + 1))
    assert await sb.read_file("kept.txt") == "the old text"
    with pytest.raises(FileNotFoundError):
        await sb.read_file("new.txt")
