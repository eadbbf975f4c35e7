"""The tools a model call offers, as one list per tool set.

An agent offers the same tools call after call, and a live run keeps each call's list
(its ``ModelEvent.tools``). ``Model.generate`` therefore hands its calls one
:class:`OfferedTools` while the tools given are the same objects (and describe
themselves with the same ``ToolInfo``\\ s), and makes a new one when they change. The
list is shared by those calls and their events, so it refuses changes: change a copy
(``list(event.tools)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from ._chat import ToolInfo

__all__ = ["OfferedTools", "offered"]


class HasToolInfo(Protocol):
    """Anything that describes itself as a tool (a :class:`~loopwright.Tool`)."""

    @property
    def info(self) -> ToolInfo: ...


def _refuse(self: OfferedTools, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        "the tools a model call offered are one list shared by the calls that offered the "
        "same tools (and their events): change a copy, list(tools)"
    )


class OfferedTools(list[ToolInfo]):
    """A list of the tools a call offered that refuses changes (it is shared); a copy of
    it (``copy``, ``pickle``, ``list(...)``) is a plain list."""

    __slots__ = ()

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[type[list[ToolInfo]], tuple[list[ToolInfo]]]:
        return list, (list(self),)


def _describes(tool: ToolInfo | HasToolInfo, info: ToolInfo) -> bool:
    return tool is info or (not isinstance(tool, ToolInfo) and tool.info is info)


def offered(tools: Sequence[ToolInfo | HasToolInfo], last: OfferedTools) -> OfferedTools:
    """``last`` when ``tools`` are (or describe themselves with) its very objects, in
    order; else a new list of what they describe."""
    if not isinstance(tools, list | tuple):  # (any iterable of tools, as before)
        tools = tuple(tools)
    if len(tools) == len(last) and all(map(_describes, tools, last)):
        return last
    return OfferedTools(t if isinstance(t, ToolInfo) else t.info for t in tools)
