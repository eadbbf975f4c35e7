"""Tool protocols: how tools reach a model, and how its reply comes back as tool calls.

- ``native``: the provider's own tool calling (:class:`NativeProtocol`);
- ``react``: ``Thought / Action / Action Input / Observation / Final Answer`` text with a
  stop sequence (:class:`ReActProtocol`);
- ``json``: one JSON action object per turn, grammar-constrained where the backend
  allows (:class:`JsonProtocol`).

Choose one with ``get_model(..., tool_protocol="react")``; the agent loop never knows
which one is in use. Protocols are found by name like providers: the built-ins above,
:func:`register_protocol`, and the ``loopwright.protocols`` entry point group.
Submodules are imported lazily (Jinja2 and ``json_repair`` only when a text protocol
first needs them). A new text protocol is one small :class:`TextProtocol` subclass: see
its documentation for the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import (
    FORMAT_ERROR_FUNCTION,
    NativeProtocol,
    ProtocolName,
    ProtocolRequest,
    ToolProtocol,
    is_format_error,
)
from ._example import ActionExample
from ._registry import (
    PROTOCOL_ENTRY_POINT_GROUP,
    protocol_names,
    register_protocol,
    resolve_tool_protocol,
)

if TYPE_CHECKING:
    from ._json import JsonProtocol
    from ._react import ReActProtocol
    from ._text import TextProtocol
    from ._toolset import Reply, ToolSet

__all__ = [
    "FORMAT_ERROR_FUNCTION",
    "PROTOCOL_ENTRY_POINT_GROUP",
    "ActionExample",
    "JsonProtocol",
    "NativeProtocol",
    "ProtocolName",
    "ProtocolRequest",
    "ReActProtocol",
    "Reply",
    "TextProtocol",
    "ToolProtocol",
    "ToolSet",
    "is_format_error",
    "protocol_names",
    "register_protocol",
    "resolve_tool_protocol",
]

_LAZY = {
    "JsonProtocol": "._json",
    "ReActProtocol": "._react",
    "TextProtocol": "._text",
    "Reply": "._toolset",
    "ToolSet": "._toolset",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
