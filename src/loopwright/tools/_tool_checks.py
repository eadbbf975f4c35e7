"""The checks a tool's settings pass when it is made, and what "not a tool" says."""

from __future__ import annotations

import re
from typing import Any, TypeAlias

from ._errors import ToolDefinitionError

__all__ = ["ExceptionTypes", "not_a_tool"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError(
            f"{what} {name!r} is not a valid tool name: use 1 to 64 letters, digits, '_' "
            "or '-' (pass name=... to choose one)."
        )
    return name


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ToolDefinitionError(
            f"A tool's timeout must be a positive number of seconds or None, got {timeout!r}."
        )
    return timeout


ExceptionTypes: TypeAlias = type[Exception] | tuple[type[Exception], ...]
"""What ``errors_to_model`` takes: an exception class or a tuple of them."""


def _check_errors(errors: Any) -> tuple[type[Exception], ...]:
    found = errors if isinstance(errors, tuple) else (errors,)
    for e in found:
        if not (isinstance(e, type) and issubclass(e, Exception)):
            raise ToolDefinitionError(
                "errors_to_model must be an exception class or a tuple of them (subclasses "
                f"of Exception, e.g. (ValueError, KeyError)), got {errors!r}."
            )
    return found


def not_a_tool(obj: Any) -> str:
    """Why ``obj``, given where a tool belongs, is not one, and how to make one."""
    what = getattr(obj, "__name__", None) or type(obj).__name__
    if callable(obj) and str(getattr(obj, "__module__", "")).startswith("loopwright.tools.builtin"):
        return (
            f"{what!r} is not a Tool but makes one: call it ({what}()), as every built-in "
            "tool is made"
        )
    return f"{what!r} is not a Tool; make a function into one with @lw.tool (or lw.tool(fn))"
