"""``python``: run Python code in the current sandbox."""

from __future__ import annotations

from typing import Any

from ...sandboxes import sandbox
from .._tool import Tool, tool
from ._bash import check_timeout, run_in_sandbox

__all__ = ["python"]


def python(timeout: float | None = None) -> Tool[..., Any]:
    """A tool running Python code in the current sandbox (see ``use_sandbox``).

    The code is given to a fresh interpreter on standard input (so its length is not
    limited by the command line). An exception (non-zero exit) or a timeout reaches the
    model as a tool error carrying the output and the traceback.

    Args:
        timeout: Seconds the code may run before it is killed; never more than the
            sandbox's ``SandboxLimits.timeout`` (``None``, the default: that limit).
    """
    check_timeout(timeout)

    @tool
    async def python(code: str) -> str:
        """Run Python 3 code in this run's sandbox and return what it prints.

        Each call is a new interpreter in the working folder: use print() to see
        values; files you write persist between calls, variables do not.

        Args:
            code: The Python code to run.
        """
        return await run_in_sandbox([sandbox().python, "-"], input=code, timeout=timeout)

    return python
