"""``strict_schema``: a tool's parameters in the strict form OpenAI's strict mode accepts.

The conversion itself lives below the providers (``model/_strict.py``), which use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..model import ToolInfo
from ..model._strict import strict_parameters

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["strict_schema"]


def strict_schema(schema: Mapping[str, Any] | ToolInfo | Tool[..., Any]) -> dict[str, Any]:
    """Turn a tool's parameter schema into the strict form OpenAI requires: ``schema`` is
    a parameter schema, a :class:`Tool` or its ``ToolInfo`` (``lw.strict_schema(search)``
    is ``lw.strict_schema(search.info.parameters)``). See ``model/_strict.py`` for the
    rules; raises :class:`~loopwright.StrictSchemaError` for what strict mode cannot
    express."""
    from ._tool import Tool

    return strict_parameters(schema.info if isinstance(schema, Tool) else schema)
