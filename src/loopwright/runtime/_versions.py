"""What a run records before it starts: its versions, and the tool specs models wrote.

``run()`` calls :func:`run_metadata` before it opens the run's scope:

- ``metadata["agent"]``: the agent's name, and ``metadata["versions"]``: its version
  and each tool's
  (``agents/_version.py``), for ``lw.diff_runs``, ``runs list --version`` and
  ``runs show`` (not computed for a run that is not persisted, ``db=False``);
- the specs of tools made with ``@lw.tool(autogenerate=...)`` are written here, before
  the run opens, so that writing them is not a step of the run (a diff or replay of the
  run sees the agent's model calls only) and counts against none of its limits. Each is
  read from the run store's ``tool_specs`` table by its key (the function's version and
  the prompt's digest), else written by the model and kept there: an unchanged function
  never calls the model again. The run records the spec it used in
  ``metadata["tool_specs"]``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._versions import digest, function_version
from ..agents._version import run_versions
from ..log._db import resolve_db
from ..log._specs import cached_spec, save_spec
from ..model import Model, ToolInfo, get_model
from ..tools import Tool
from ..tools._autogen import check_spec, write_spec

__all__ = ["run_metadata", "write_tool_spec"]

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


async def run_metadata(
    agent: Any,
    tools: Sequence[Any] | None,
    metadata: Mapping[str, Any] | None,
    *,
    model: Model | None,
    db: str | os.PathLike[str] | Literal[False] | None,
) -> dict[str, Any]:
    """The run's metadata: the user's, the versions and the tool specs written."""
    meta = dict(metadata or {})
    every = [*getattr(agent, "offered", ()), *(tools or ())]
    specs = {}
    for t in every:
        if isinstance(t, Tool) and t.autogenerate is not False:
            info = await write_tool_spec(t, model=model if t.autogenerate is True else None, db=db)
            specs[t.name] = {"key": spec_key(t), **info.model_dump(mode="json")}
    if specs:
        meta.setdefault("tool_specs", specs)
    if db is not False:
        name = getattr(agent, "name", None) or getattr(agent, "__name__", None)
        if isinstance(name, str):
            meta.setdefault("agent", name)
        meta.setdefault(
            "versions", run_versions(agent, [t for t in tools or () if isinstance(t, Tool)])
        )
    return meta
