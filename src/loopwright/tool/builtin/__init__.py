"""Built-in tools, each made by calling its factory (``think()``, ``submit()``, ``bash()``...).

``think`` and ``submit`` need nothing; the sandbox tools (``bash``, ``python``,
``text_editor``, ``files``) run in the current sandbox.
"""

from .submit import submit
from .think import think

__all__ = ["submit", "think"]
