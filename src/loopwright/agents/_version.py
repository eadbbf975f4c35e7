"""The versions a run records: its agent's and each of its tools'.

Built on :func:`loopwright._versions.function_version` (a function's source as a syntax
tree, the helpers of its own module it uses, the values it closes over):

- a tool's version is its name, its description and JSON schema as the model sees
  them, and its function's version. A tool whose spec a model writes
  (``@lw.tool(autogenerate=True)``) counts its function's version and the prompt that
  writes the spec instead: the spec follows from them (and is recorded with the run);
- a :class:`ReactAgent`'s version is its class's name and every option that shapes what
  it does: the prompt, the offered tools by their versions (``submit`` included), its
  handoffs (name, description, the agent handed to), the model's name, the generation
  config, the history policy, hooks and other callables by their function versions
  (a hook instance by its class), plain values (limits, nudge, recovery) as they are;
- any other agent (a function made an agent with ``@lw.agent``) is its function's version.

Library code counts by its qualified name only: a loopwright upgrade is not a change of
the user's agent. The same code gives the same versions in another process.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._versions import canonical, digest, function_version
from ..model import Model
from ..tools import Tool
from ._handoff import Handoff

__all__ = ["agent_version", "run_versions", "tool_version"]

# fields whose value is described another way (the offered tools, their handoffs) or
# that do not change behaviour (the description is what *another* agent sees: as_tool)
_SKIPPED = frozenset({"tools", "submit", "offered", "handoffs", "submit_tool"})


def tool_version(tool: Tool[..., Any]) -> str:
    """The version of ``tool``: see the module's docstring."""
    fn_version = function_version(tool.fn)
    if tool.autogenerate is not False:
        return digest("tool", tool.name, "autogenerate", tool.spec_prompt, fn_version)
    info = tool.info
    # a schema is JSON data already: sorted keys make it canonical (and cost a tenth)
    schema = json.dumps(info.parameters, sort_keys=True, default=str)
    return digest("tool", tool.name, info.description, schema, fn_version)


def _value_version(value: Any) -> Any:
    """A field's value as canonical data: callables and hooks by their versions."""
    if value is None or isinstance(value, bool | int | float | str):
        return canonical(value)
    if isinstance(value, Model):
        return {"model": value.name}
    if isinstance(value, Tool):
        return {"tool": tool_version(value)}
    if isinstance(value, list | tuple):
        return [_value_version(v) for v in value]
    if dataclasses.is_dataclass(value) or callable(getattr(value, "model_dump", None)):
        return canonical(value)
    if isinstance(value, type) or (callable(value) and hasattr(value, "__code__")):
        return {"fn": function_version(value)}
    # an object (a hook, a history policy): its class's code, and its plain state
    state = (
        {k: v for k, v in vars(value).items() if not k.startswith("_")}
        if hasattr(value, "__dict__")
        else {}
    )
    return {
        "class": function_version(type(value)),
        "state": canonical({k: _value_version(v) for k, v in sorted(state.items())}),
    }


def agent_version(
    agent: Any, _seen: frozenset[int] = frozenset(), _tools: Mapping[int, str] | None = None
) -> str:
    """The version of ``agent`` (a :class:`ReactAgent`, or any agent callable).
    (``_tools``: versions of its offered tools computed already, by ``id()``.)"""
    if id(agent) in _seen:  # handoffs that lead back to an agent already counted
        return "cycle"
    _seen = _seen | {id(agent)}
    if not dataclasses.is_dataclass(agent) or isinstance(agent, type):
        return digest("agent", function_version(agent))
    cls = type(agent)
    parts = ["agent", f"{cls.__module__}.{cls.__qualname__}"]
    for f in dataclasses.fields(agent):
        if f.name in _SKIPPED or f.name == "description":
            continue
        value = getattr(agent, f.name)
        parts.append(f"{f.name}={json.dumps(_value_version(value), sort_keys=True)}")
    known = _tools or {}
    offered = [known.get(id(t)) or tool_version(t) for t in getattr(agent, "offered", ())]
    parts.append("offered=" + json.dumps(offered))
    handoffs: dict[str, Handoff] = getattr(agent, "handoffs", {})
    for name in sorted(handoffs):
        h = handoffs[name]
        parts.append(f"handoff={name}:{h.description}:{agent_version(h.agent, _seen)}")
    return digest(*parts)


def run_versions(agent: Any, extra_tools: Sequence[Tool[..., Any]] = ()) -> dict[str, str]:
    """What a run records as ``metadata["versions"]``: ``{"agent": ..., "tool:NAME": ...}``.

    The tools are the agent's offered tools and the run's extra tools."""
    tools = [t for t in [*getattr(agent, "offered", ()), *extra_tools] if isinstance(t, Tool)]
    known = {id(t): tool_version(t) for t in tools}  # (each once: the agent's counts them)
    versions = {"agent": agent_version(agent, _tools=known)}
    for t in tools:
        versions[f"tool:{t.name}"] = known[id(t)]
    return versions
