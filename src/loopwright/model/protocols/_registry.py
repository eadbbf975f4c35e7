"""Tool protocols by name: built-ins, :func:`register_protocol` and entry points.

The same :class:`~loopwright._registry.LazyRegistry` as providers and sandbox backends:
a name maps to a :class:`ToolProtocol` subclass, or to its ``"module:Class"`` path,
imported when the name is first used (so Jinja2 and ``json_repair`` load only with a
text protocol).
"""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigurationError
from ..._registry import LazyRegistry
from ._base import NativeProtocol, ToolProtocol

__all__ = [
    "PROTOCOL_ENTRY_POINT_GROUP",
    "protocol_names",
    "register_protocol",
    "resolve_tool_protocol",
]

PROTOCOL_ENTRY_POINT_GROUP = "loopwright.protocols"
"""Third-party packages register tool protocols under this entry point group: the entry
point's name is the protocol name, its object a :class:`ToolProtocol` subclass. For
example, in the package's ``pyproject.toml``::

    [project.entry-points."loopwright.protocols"]
    xml = "loopwright_xml:XmlProtocol"
"""

_BUILTIN: dict[str, str] = {
    "native": "loopwright.model.protocols._base:NativeProtocol",
    "react": "loopwright.model.protocols._react:ReActProtocol",
    "json": "loopwright.model.protocols._json:JsonProtocol",
}
_protocols: LazyRegistry[type[ToolProtocol]] = LazyRegistry(
    "tool protocol",
    PROTOCOL_ENTRY_POINT_GROUP,
    _BUILTIN,
    lambda p: isinstance(p, type) and issubclass(p, ToolProtocol),
    "a ToolProtocol subclass",
)


def _key(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"tool protocol name must be a non-empty string, got {name!r}")
    return name.strip().lower()


def register_protocol(name: str, protocol: type[ToolProtocol] | str | None = None) -> Any:
    """Register a tool protocol under ``name`` (names are not case-sensitive).

    ``protocol`` is a :class:`ToolProtocol` subclass (usually a
    :class:`~loopwright.model.protocols.TextProtocol`), or its ``"module:Class"`` path to
    import lazily; ``get_model(..., tool_protocol=name)`` then builds it with the
    provider's options for that name (``ModelAPI.protocol_options``). Usable as a class
    decorator::

        @lw.register_protocol("xml")
        class XmlProtocol(TextProtocol): ...

    Raises:
        ConfigurationError: ``name`` is not a non-empty string, or ``protocol`` is
            neither a ToolProtocol subclass nor a ``"module:Class"`` path.
    """
    key = _key(name)

    def add(p: type[ToolProtocol] | str) -> type[ToolProtocol] | str:
        _protocols.add(key, p)
        return p

    return add if protocol is None else add(protocol)


def protocol_names() -> list[str]:
    """The names of every registered tool protocol, entry points included."""
    return _protocols.names()


def resolve_tool_protocol(
    spec: ToolProtocol | str | None,
    *,
    supports_tools: bool = True,
    provider: str = "",
    options: dict[str, dict[str, Any]] | None = None,
) -> ToolProtocol:
    """The protocol for ``spec``: a :class:`ToolProtocol`, a registered name, or ``None``.

    ``None`` means ``native`` where the provider has native tool calling, else ``json``.
    ``options`` maps a protocol name to the keyword arguments its class is built with
    (a provider's defaults, from ``ModelAPI.protocol_options``).

    Raises:
        ConfigurationError: An unknown name (the message lists the known ones), a
            protocol that refuses the provider's options, or ``native`` for a provider
            without tool calling.
    """
    if isinstance(spec, ToolProtocol):
        return spec
    if spec is None:
        spec = "native" if supports_tools else "json"
    if not isinstance(spec, str):
        raise ConfigurationError(
            f"tool_protocol must be a protocol name ({', '.join(protocol_names())}) or a "
            f"ToolProtocol, got {spec!r}"
        )
    name = spec.strip().lower()
    cls = _protocols.get(name)
    if cls is None:
        raise ConfigurationError(
            f"unknown tool_protocol {spec!r}; known protocols: {', '.join(protocol_names())}, "
            "or a ToolProtocol; register one with lw.register_protocol()"
        )
    if issubclass(cls, NativeProtocol) and not supports_tools:
        text = [n for n in protocol_names() if n != name]
        raise ConfigurationError(
            f"provider {provider or '?'!r} has no native tool calling; use a text "
            f"tool_protocol ({', '.join(text)})"
        )
    kwargs = (options or {}).get(name, {})
    try:
        return cls(**kwargs)
    except TypeError as ex:
        raise ConfigurationError(
            f"tool protocol {name!r} ({cls.__name__}) cannot be built with {kwargs!r}: {ex}"
        ) from None
