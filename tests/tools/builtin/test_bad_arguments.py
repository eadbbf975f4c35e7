"""Arguments no sandbox can take (a lone surrogate, a NUL byte) reach the model as tool
errors, in every backend: they never end the run with a raw exception."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import loopwright as lw
from loopwright.sandboxes import SandboxEnvironment, use_sandbox
from loopwright.tools import Tool
from loopwright.tools.builtin import bash, files, python, text_editor
from tests.sandboxes.conftest import BWRAP_PROBLEM

from .test_sandbox_tools import call

SURROGATE = "x\ud800y"
NUL = "x\0y"


@pytest.fixture(params=["bwrap", "local"])
async def sb(request: pytest.FixtureRequest) -> AsyncIterator[SandboxEnvironment]:
    if request.param == "bwrap" and BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    async with use_sandbox(request.param) as env:
        yield env


EDIT = {"path": "a.txt"}

CASES: list[tuple[str, dict[str, Any]]] = [
    ("bash", {"cmd": f"echo {SURROGATE}"}),
    ("python", {"code": f"print('{SURROGATE}')"}),
    ("files", {"action": "read", "path": SURROGATE}),
    ("files", {"action": "read", "path": NUL}),
    ("files", {"action": "write", "path": NUL, "content": "x"}),
    ("files", {"action": "write", "path": SURROGATE, "content": "x"}),
    ("files", {"action": "write", "path": "ok.txt", "content": SURROGATE}),
    ("files", {"action": "list", "path": NUL}),
    ("files", {"action": "list", "path": SURROGATE}),
    ("text_editor", {"command": "view", "path": SURROGATE}),
    ("text_editor", {"command": "view", "path": NUL}),
    ("text_editor", {"command": "create", "path": NUL, "file_text": "x"}),
    ("text_editor", {"command": "create", "path": "ok.txt", "file_text": SURROGATE}),
    ("text_editor", {**EDIT, "command": "insert", "insert_line": 0, "new_str": SURROGATE}),
    (
        "text_editor",
        {**EDIT, "command": "str_replace", "old_str": "a", "new_str": SURROGATE},
    ),
]


async def test_bad_text_in_any_argument_is_a_tool_error(sb: SandboxEnvironment) -> None:
    tools: list[Tool[..., Any]] = [bash(), python(), files(), text_editor()]
    async with use_sandbox(sb):
        await sb.write_file("a.txt", "a\n")
        for name, args in CASES:
            result = await call(tools, name, **args)
            assert isinstance(result, lw.ToolMessage)
            assert result.error is not None, (name, args, result.text)
            assert "NUL" in result.error.message or "surrogate" in result.error.message, (
                name,
                args,
                result.error.message,
            )
        # nothing was written, and the sandbox still works
        assert await sb.read_file("a.txt") == "a\n"
        ok = await call(tools, "bash", cmd="echo fine")
        assert ok.error is None and ok.text == "fine\n"


async def test_a_command_line_too_long_for_the_kernel_is_a_tool_error(
    sb: SandboxEnvironment,
) -> None:
    # Linux refuses an argument over 128 KiB (E2BIG): a model's long heredoc must reach
    # it as a tool error naming the way out, not end the run with a SandboxError
    long = "x" * 200_000
    with pytest.raises(lw.ConfigurationError, match="too long"):
        await sb.exec(["sh", "-c", f": {long}"])
    with pytest.raises(lw.ConfigurationError, match="too long"):
        await sb.exec(["true"], env={"BIG": long})
    tools: list[Tool[..., Any]] = [bash()]
    async with use_sandbox(sb):
        result = await call(tools, "bash", cmd=f"cat > big.txt <<'EOF'\n{long}\nEOF")
        assert result.error is not None, result.text
        assert "too long" in result.error.message and "file" in result.error.message
        ok = await call(tools, "bash", cmd="echo fine")
        assert ok.error is None and ok.text == "fine\n"
