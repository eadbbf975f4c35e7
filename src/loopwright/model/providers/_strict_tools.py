"""Tools sent in OpenAI's strict mode (``"strict": true``), for ``strict_tools=True``.

With strict function calling the server constrains the model's arguments to the schema,
which must then be in the strict form :func:`loopwright.strict_schema` makes (every
property required, optional ones nullable, ``additionalProperties: false``). A tool whose
schema has no strict form (a free-form ``dict``, ``Any``) is sent as it is, not strict,
with a warning once per tool name.
"""

from __future__ import annotations

import logging
from typing import Any

from .._chat import ToolInfo

__all__ = ["StrictTools"]

_log = logging.getLogger("loopwright.model")
_MAX_CACHED = 512


class StrictTools:
    """One model's strict tool definitions, each made once per :class:`ToolInfo` (an agent
    offers the same tools call after call)."""

    def __init__(self, model: str) -> None:
        self._model = model
        # id(info) -> (info, its parameters, the strict schema or None when it has none)
        self._cache: dict[int, tuple[ToolInfo, dict[str, Any], dict[str, Any] | None]] = {}
        self._warned: set[str] = set()

    def function(self, info: ToolInfo) -> dict[str, Any]:
        """The ``tools`` entry for ``info``: strict when its schema has a strict form."""
        cached = self._cache.get(id(info))
        if cached is None or cached[0] is not info or cached[1] is not info.parameters:
            cached = (info, info.parameters, self._strict(info))
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            self._cache[id(info)] = cached
        schema = cached[2]
        function: dict[str, Any] = {
            "name": info.name,
            "description": info.description,
            "parameters": info.parameters if schema is None else schema,
        }
        if schema is not None:
            function["strict"] = True
        return {"type": "function", "function": function}

    def _strict(self, info: ToolInfo) -> dict[str, Any] | None:
        from ..._errors import StrictSchemaError
        from .._strict import strict_parameters as strict_schema

        try:
            return strict_schema(info.parameters)
        except StrictSchemaError as ex:
            if info.name not in self._warned:
                self._warned.add(info.name)
                _log.warning(
                    "%s: tool %r is sent without strict mode: %s", self._model, info.name, ex
                )
            return None
