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

from ..agents._specs import spec_key, write_tool_spec
from ..agents._version import run_versions
from ..model import Model
from ..tools import Tool

__all__ = ["run_metadata"]


async def run_metadata(
    agent: Any,
    tools: Sequence[Any] | None,
    metadata: Mapping[str, Any] | None,
    *,
    model: Model | None,
    db: str | os.PathLike[str] | Literal[False] | None,
) -> dict[str, Any]:
    """The run's metadata: the user's, the versions and the tool specs written.

    A run nested in another (an agent used as a tool) is a span of that run: it keeps
    its specs in that run's store, and records no versions of its own."""
    from ._in_force import current_recording

    meta = dict(metadata or {})
    around = current_recording()
    if around is not None:
        db = around.db_path if around.db_path is not None else False
    every = [*getattr(agent, "offered", ()), *(tools or ())]
    specs = {}
    for t in every:
        if isinstance(t, Tool) and t.autogenerate is not False:
            info = await write_tool_spec(t, model=model if t.autogenerate is True else None, db=db)
            specs[t.name] = {"key": spec_key(t), **info.model_dump(mode="json")}
    if specs:
        meta.setdefault("tool_specs", specs)
    if db is not False and around is None:
        name = getattr(agent, "name", None) or getattr(agent, "__name__", None)
        if isinstance(name, str):
            meta.setdefault("agent", name)
        meta.setdefault(
            "versions", run_versions(agent, [t for t in tools or () if isinstance(t, Tool)])
        )
    return meta
