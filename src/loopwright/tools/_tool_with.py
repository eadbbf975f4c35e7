"""``tool_with``: a renamed or redescribed copy of a tool."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal, ParamSpec, TypeVar

from ..model import ToolInfo
from ._errors import ToolDefinitionError
from ._tool import UNSET, Tool, _Unset
from ._tool_checks import ExceptionTypes, _check_errors, _check_name, _check_timeout

__all__ = ["tool_with"]

P = ParamSpec("P")
R = TypeVar("R")


def tool_with(
    tool: Tool[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, str] | None = None,
    parallel: bool | None = None,
    timeout: float | Literal[_Unset.UNSET] | None = UNSET,
    errors_to_model: ExceptionTypes | None = None,
) -> Tool[P, R]:
    """A copy of ``tool`` with another name, description or parameter descriptions.

    The original is not changed::

        lookup = tool_with(search, name="lookup", parameters={"query": "A product name."})

    Args:
        tool: The tool to copy.
        name: The new name.
        description: The new description.
        parameters: Parameter name -> new description.
        parallel: A new ``parallel`` flag.
        timeout: A new timeout (``None``: no limit).
        errors_to_model: New exception classes that are errors for the model (see
            :func:`tool`; ``()`` for none).

    Raises:
        ToolDefinitionError: ``parameters`` names a parameter the tool does not have,
            or the new name is invalid.
    """
    from ..model._schema_order import ordered

    info = tool.info
    new_params = copy.deepcopy(info.parameters)
    props: dict[str, Any] = new_params.get("properties") or {}
    for pname, pdesc in (parameters or {}).items():
        if pname not in props:
            valid = ", ".join(props) or "none"
            raise ToolDefinitionError(
                f"Tool {tool.name!r} has no parameter {pname!r} (its parameters: {valid})."
            )
        if not isinstance(pdesc, str):
            raise ToolDefinitionError(f"The description of {pname!r} must be a string.")
        props[pname] = ordered({**props[pname], "description": pdesc})
    new = copy.copy(tool)
    if name is not None:
        new.name = _check_name(name, "The name")
    if parallel is not None:
        new.parallel = bool(parallel)
    if timeout is not UNSET:
        new.timeout = _check_timeout(timeout)
    if errors_to_model is not None:
        new.errors_to_model = _check_errors(errors_to_model)
    new.autogenerate, new.spec_prompt = False, ""  # a written spec is now this one's own
    new._info = ToolInfo(
        name=new.name,
        description=info.description if description is None else description,
        parameters=new_params,
    )
    return new
