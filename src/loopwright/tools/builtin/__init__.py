"""Built-in tools, each made by calling its factory (``think()``, ``submit()``, ``bash()``...).

``think`` and ``submit`` need nothing; the sandbox tools (``bash``, ``python``,
``text_editor``, ``files``) run in the current sandbox; ``llm_fallback`` asks a model.
The sandbox tools and ``llm_fallback`` are imported on first use (they load the
sandboxes part), so ``submit`` and ``think`` cost no more than themselves.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

from ._submit import submit
from ._think import think

if TYPE_CHECKING:
    from ._bash import bash
    from ._files import files
    from ._llm_fallback import llm_fallback
    from ._python import python
    from ._text_editor import text_editor

__all__ = ["bash", "files", "llm_fallback", "python", "submit", "text_editor", "think"]

_LAZY = {name: f"._{name}" for name in ("bash", "files", "llm_fallback", "python", "text_editor")}
"""The factories imported on first use, and their modules (``._<name>``)."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
