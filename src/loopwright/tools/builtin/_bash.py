"""``bash``: run shell commands in the current sandbox."""

from __future__ import annotations

import asyncio
from typing import Any

from ..._errors import ConfigurationError
from ...sandboxes import ExecResult, ExecTimeoutError, sandbox
from .._errors import ToolError
from .._tool import Tool, tool

__all__ = ["TIMEOUT_GRACE", "bash", "check_timeout", "exec_output", "run_in_sandbox"]

TIMEOUT_GRACE = 30.0
"""The tool's own deadline is this much later than the sandbox's, as a backstop."""


def check_timeout(timeout: float | None) -> float | None:
    """A tool's ``timeout`` argument, refused unless ``None`` or positive seconds."""
    if timeout is not None and not (
        isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
    ):
        raise ConfigurationError(f"timeout must be positive seconds or None, got {timeout!r}")
    return timeout


def exec_output(result: ExecResult) -> str:
    """A command's output as the model sees it: stdout, then stderr, then notes."""
    parts = [result.stdout]
    if result.stderr:
        if result.stdout and not result.stdout.endswith("\n"):
            parts.append("\n")
        parts.append(result.stderr)
    if result.truncated:
        parts.append(
            "\n[output truncated: the command printed more than the sandbox keeps and "
            "was stopped; print less, e.g. pipe through head or write to a file]"
        )
    return "".join(parts)


async def run_in_sandbox(cmd: list[str], *, input: str | None, timeout: float | None) -> str:
    """Run ``cmd`` in the current sandbox; its output, or a :class:`ToolError` with
    the output when it fails or times out.

    The command may run ``timeout`` seconds, and never longer than the sandbox's
    ``limits.timeout`` (``None``: that limit).
    """
    sb = sandbox()
    limit = sb.limits.timeout
    timeout = limit if timeout is None else min(timeout, limit)
    try:
        async with asyncio.timeout(timeout + TIMEOUT_GRACE):  # (a backend that hangs)
            result = await sb.exec(cmd, input=input, timeout=timeout)
    except ConfigurationError as e:  # what the model wrote cannot be run (a NUL byte...)
        raise ToolError(f"The command cannot be run: {e}") from e
    except ExecTimeoutError as e:
        output = exec_output(e.result)
        raise ToolError(
            f"The command timed out after {timeout:g} seconds and was killed."
            + (f" Output before the timeout:\n{output}" if output else "")
        ) from e
    output = exec_output(result)
    if result.success:
        return output
    if result.truncated:
        why = "The command printed too much and was stopped."
    elif result.returncode < 0:
        why = (
            f"The command was killed by signal {-result.returncode} (a resource limit: "
            "CPU time, memory or file size, or a crash)."
        )
    elif 128 < result.returncode <= 128 + 64:  # (how bwrap, like a shell, reports one)
        why = (
            f"The command ended with exit code {result.returncode}, which says it was "
            f"killed by signal {result.returncode - 128} (a resource limit: CPU time, "
            "memory or file size, or a crash)."
        )
    else:
        why = f"The command failed with exit code {result.returncode}."
    raise ToolError(why + (f" Output:\n{output}" if output else " It printed nothing."))


def bash(timeout: float | None = None) -> Tool[..., Any]:
    """A tool running bash commands in the current sandbox (see ``use_sandbox``).

    Each call is a fresh ``bash -c``: files in the working folder persist between
    calls; the current folder, variables and background processes do not. A failing
    command (non-zero exit) or a timeout reaches the model as a tool error carrying
    the output.

    Args:
        timeout: Seconds a command may run before it is killed with everything it
            started; never more than the sandbox's ``SandboxLimits.timeout`` (``None``,
            the default: that limit).
    """
    check_timeout(timeout)

    @tool
    async def bash(cmd: str) -> str:
        """Run a bash command in this run's sandbox and return its output.

        Each call starts a new shell in the working folder: files you write persist,
        but `cd`, variables and background processes do not carry over (chain with
        `&&` when you need them).

        Args:
            cmd: The bash command to run.
        """
        return await run_in_sandbox(["bash", "-c", cmd], input=None, timeout=timeout)

    return bash
