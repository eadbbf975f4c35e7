"""The texts of a tool's expected failures, as the model reads them."""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["exception_text", "os_error_text", "unknown_tool"]


def exception_text(err: Exception) -> str:
    """``ValueError: bad input`` (the class's name alone when the message is empty)."""
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def os_error_text(err: OSError, default: str) -> str:
    """``No such file or directory: 'x.txt'``, without the ``[Errno 2]`` prefix."""
    if err.filename is not None:
        reason = err.strerror or (os.strerror(err.errno) if err.errno else default)
        text = f"{reason}: {err.filename!r}"
        if err.filename2 is not None:
            text += f" -> {err.filename2!r}"
        return text
    return str(err) or f"{default}."


def unknown_tool(name: str, tools: Iterable[str]) -> str:
    """What the model is told when it calls a tool that is not there."""
    names = sorted(tools)
    if not names:
        return f"Unknown tool {name!r}: no tools are available."
    import difflib

    hint = ""
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        hint = f" Did you mean {close[0]!r}?"
    return f"Unknown tool {name!r}.{hint} Available tools: {', '.join(names)}."
