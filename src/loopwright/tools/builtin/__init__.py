"""Built-in tools, each made by calling its factory (``think()``, ``submit()``, ``bash()``...).

``think`` and ``submit`` need nothing; the sandbox tools (``bash``, ``python``,
``text_editor``, ``files``) run in the current sandbox; ``llm_fallback`` asks a model.
"""

from ._bash import bash
from ._files import files
from ._llm_fallback import llm_fallback
from ._python import python
from ._submit import submit
from ._text_editor import text_editor
from ._think import think

__all__ = ["bash", "files", "llm_fallback", "python", "submit", "text_editor", "think"]
