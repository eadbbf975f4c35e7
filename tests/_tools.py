"""Small tools and hooks several test files use."""

from __future__ import annotations

import loopwright as lw


@lw.tool
async def add(a: int, b: int) -> int:
    """Add.

    Args:
        a: First.
        b: Second.
    """
    return a + b


@lw.tool
async def sub(a: int, b: int) -> int:
    """Subtract.

    Args:
        a: First.
        b: Second.
    """
    return a - b


class CallRecorder:
    """A model hook that keeps every model call it saw completed."""

    def __init__(self) -> None:
        self.calls: list[lw.ModelCall] = []

    def before_generate(self, call: lw.ModelCall) -> None:
        pass

    def after_generate(self, call: lw.ModelCall) -> None:
        self.calls.append(call)
