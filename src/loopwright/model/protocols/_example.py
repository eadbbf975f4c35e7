"""Worked examples of actions, shown to the model in a text protocol's prompt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..._errors import ConfigurationError
from .._chat import ToolInfo

__all__ = ["ActionExample"]


@dataclass(frozen=True, slots=True)
class ActionExample:
    """One example reply: a thought and an action (a tool and its arguments).

    The protocol renders it in its own format (``Thought:/Action:/Action Input:`` for
    ``react``, one JSON object for ``json``). An example whose tool is ``finish`` shows
    a final answer (``arguments={"answer": ...}``).

    Build one from a tool and arguments with :meth:`of`::

        ReActProtocol(examples=[
            ActionExample.of(multiply, {"a": 465, "b": 321}, thought="First the product."),
            ActionExample.of("finish", {"answer": "149265"}, thought="I know the answer."),
        ])
    """

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    thought: str = ""

    @classmethod
    def of(
        cls, tool: Any, arguments: dict[str, Any] | None = None, *, thought: str = ""
    ) -> ActionExample:
        """An example calling ``tool`` (a ``Tool``, ``ToolInfo``, function or name).

        Raises:
            ConfigurationError: An argument the tool does not take (when its parameters
                are known).
        """
        info: ToolInfo | None = None
        if isinstance(tool, ToolInfo):
            info = tool
        elif isinstance(getattr(tool, "info", None), ToolInfo):
            info = tool.info
        if info is not None:
            name = info.name
        elif isinstance(tool, str):
            name = tool
        elif callable(tool) and hasattr(tool, "__name__"):
            name = tool.__name__
        else:
            raise ConfigurationError(
                f"ActionExample.of: expected a tool, a function or a name, got {tool!r}"
            )
        args = dict(arguments or {})
        if info is not None:
            props = info.parameters.get("properties") or {}
            unknown = sorted(set(args) - set(props))
            if unknown:
                raise ConfigurationError(
                    f"ActionExample.of: {name} has no parameter(s) {', '.join(unknown)}; "
                    f"its parameters are: {', '.join(props) or '(none)'}"
                )
        return cls(tool=name, arguments=args, thought=thought)
