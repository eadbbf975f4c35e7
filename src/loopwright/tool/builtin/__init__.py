"""Built-in tools.

``think`` and ``submit``/``finish`` need nothing; the sandbox tools (``bash``,
``python``, ``text_editor``, ``files``) run in the current sandbox.
"""

from .submit import finish, submit, submit_tool
from .think import think

__all__ = ["finish", "submit", "submit_tool", "think"]
