"""Writing the specs of tools made with ``@lw.tool(autogenerate=...)``, through the run
store's cache (``log/_specs.py``), keyed by the function's version and the prompt.

``lw.run`` writes the specs of its agent's and its own tools before the run opens
(``runtime/_versions.py``); an agent that starts with a tool whose spec is still
unwritten (an agent used as a tool, or called without ``lw.run``) writes it before its
first model call (:func:`write_missing_specs`), into the run store of the run it is in
(the one ``lw.run`` names with :func:`~loopwright.log._specs.spec_store`), else into
this process's memory only. That spec-writing call is then recorded in the run's
transcript like any model call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from .._versions import digest, function_version
from ..log._db import resolve_db
from ..log._specs import cached_spec, current_spec_store, save_spec
from ..model import Model, ToolInfo, get_model
from ..tools import Tool
from ..tools._autogen import check_spec, write_spec

__all__ = ["spec_key", "write_missing_specs", "write_tool_spec"]

# specs written in this process, by key: for runs that are not persisted (db=False)
_written: dict[str, dict[str, Any]] = {}


def spec_key(tool: Tool[..., Any]) -> str:
    """The cache key of ``tool``'s written spec: its function's version and its prompt."""
    return digest("spec", function_version(tool.fn), tool.spec_prompt)


async def write_tool_spec(
    tool: Tool[..., Any],
    *,
    model: str | Model | None = None,
    db: str | os.PathLike[str] | Literal[False] | None = None,
) -> ToolInfo:
    """Write the spec of ``tool`` (made with ``autogenerate``) and use it; return it.

    The spec comes from the run store's cache (``db``: default ``$LOOPWRIGHT_DB`` or
    ``./loopwright-runs.db``; ``False``: this process's memory only) when the function
    and the prompt are unchanged; else ``model`` (default: the tool's ``autogenerate``
    model, or the current default model) writes it, and it is kept.

    Raises:
        ToolDefinitionError: The tool has no spec to write, or the model's spec does not
            match the function's signature (nothing is kept then).
    """
    from ..tools import ToolDefinitionError

    if tool.autogenerate is False:
        raise ToolDefinitionError(f"tool {tool.name!r} was not made with autogenerate")
    key = spec_key(tool)
    path = None if db is False else resolve_db(db)
    spec = cached_spec(path, key) if path is not None else None
    spec = spec if spec is not None else _written.get(key)
    if spec is not None:
        info = check_spec(tool, spec)  # (the store is a file: read it as untrusted)
    else:
        chosen = model if model is not None else tool.autogenerate
        info = await write_spec(tool, get_model(None if chosen is True else chosen))
        spec = {"description": info.description, "parameters": info.parameters}
    _written[key] = spec
    if path is not None:
        save_spec(path, key, tool.name, spec)
    tool.use_spec(info)
    return info


async def write_missing_specs(tools: Sequence[Any]) -> None:
    """Write the specs of the ``tools`` made with ``autogenerate`` that have none yet."""
    for t in tools:
        if isinstance(t, Tool) and t.needs_spec:
            store = current_spec_store()
            await write_tool_spec(t, db=store if store is not None else False)
