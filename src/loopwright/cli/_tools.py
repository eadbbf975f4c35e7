"""``--tool NAME``: built-in tools by name, or any tool as ``module:attr`` / ``file.py:attr``.

``attr`` may be a Tool, a list of Tools, a function annotated to return a Tool (or a list
of them), which is called to make them, or any other function, which becomes a tool as
``@lw.tool`` would make it (its docstring describes it to the model).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from .._imports import import_file
from ..tools import Tool, ToolDefinitionError, tool
from ..tools import builtin as builtin_tools

__all__ = ["BUILTIN_TOOLS", "SANDBOX_TOOLS", "resolve_tools"]

BUILTIN_TOOLS = ("bash", "python", "text_editor", "files", "think", "llm_fallback")
"""Tools ``--tool`` knows by name."""
SANDBOX_TOOLS = frozenset({"bash", "python", "text_editor", "files"})
"""Built-in tools that run in a sandbox (one is started when ``--sandbox`` is not given)."""


def _load(module: str) -> Any:
    if module.endswith(".py"):
        path = Path(module).resolve()
        if not path.is_file():
            raise ConfigurationError(f"--tool: no file {module!r}")
        try:
            return import_file(path, "loopwright_cli_tools_")
        except ImportError as ex:
            raise ConfigurationError(f"--tool {module}: {ex}") from None
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as ex:
        raise ConfigurationError(f"--tool: no module {module!r} ({ex})") from None


_EXPECTED = (
    "expected a Tool, a list of Tools, a function (made a tool as @lw.tool would), or a "
    "function annotated to return Tools (called to make them)"
)


def _returns_tools(fn: Any) -> bool:
    """Whether ``fn``'s return annotation names ``Tool`` (a factory of tools)."""
    try:
        hint: Any = typing.get_type_hints(fn).get("return")
    except Exception:  # an annotation that does not resolve here: read its text
        hint = inspect.signature(fn).return_annotation
    text = hint if isinstance(hint, str) else repr(hint)
    return re.search(r"\bTool\b", text) is not None


def _as_tools(obj: Any, spec: str, *, made: bool = False) -> list[Tool[..., Any]]:
    if isinstance(obj, Tool):
        return [obj]
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Tool) for t in obj):
        return list(obj)
    if made:
        raise ConfigurationError(
            f"--tool {spec}: the function returned a {type(obj).__name__}, not Tools"
        )
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        if _returns_tools(obj):
            return _as_tools(obj(), spec, made=True)
        try:
            return [tool(obj)]
        except ToolDefinitionError as ex:
            raise ConfigurationError(f"--tool {spec}: cannot make it a tool: {ex}") from None
    raise ConfigurationError(
        f"--tool {spec}: a {type(obj).__name__!r} object is not a tool ({_EXPECTED})"
    )


def resolve_tools(specs: Sequence[str]) -> list[Tool[..., Any]]:
    """The tools named by ``--tool`` options.

    Raises:
        ConfigurationError: An unknown name, or something that is not a tool.
    """
    tools: list[Tool[..., Any]] = []
    for spec in specs:
        if ":" in spec:
            module, _, attr = spec.rpartition(":")
            mod = _load(module)
            if not hasattr(mod, attr):
                raise ConfigurationError(f"--tool {spec}: {module!r} has no {attr!r}")
            tools.extend(_as_tools(getattr(mod, attr), spec))
            continue
        if spec not in BUILTIN_TOOLS:
            raise ConfigurationError(
                f"--tool: unknown tool {spec!r}; built-in tools: {', '.join(BUILTIN_TOOLS)} "
                "(or give module:attr or file.py:attr)"
            )
        builtin = getattr(builtin_tools, spec)  # a tool, or a factory of one
        tools.extend(_as_tools(builtin if isinstance(builtin, Tool) else builtin(), spec))
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(f"--tool: tool names must be unique; repeated: {dupes}")
    return tools
