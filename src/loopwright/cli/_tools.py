"""``--tool NAME``: built-in tools by name, or any tool as ``module:attr`` / ``file.py:attr``."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from .._imports import import_file
from ..tool import Tool

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


def _as_tools(obj: Any, spec: str) -> list[Tool[..., Any]]:
    if isinstance(obj, Tool):
        return [obj]
    if isinstance(obj, (list, tuple)) and all(isinstance(t, Tool) for t in obj):
        return list(obj)
    if callable(obj):
        return _as_tools(obj(), spec)
    raise ConfigurationError(
        f"--tool {spec}: {type(obj).__name__} is not a tool (expected a Tool, a list of "
        "Tools, or a function returning them)"
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
        mod = importlib.import_module(f"loopwright.tool.builtin.{spec}")
        tools.extend(_as_tools(getattr(mod, spec), spec))
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(f"--tool: tool names must be unique; repeated: {dupes}")
    return tools
