"""``loopwright mcp serve``: serve tools (and agents, each as one tool) as an MCP server."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import click

from .._errors import ConfigurationError
from ._exit_codes import EXIT_INTERRUPTED, EXIT_OK

__all__ = ["mcp_group"]


def _is_agent(obj: Any) -> bool:
    """An agent object (``lw.react(...)``): callable, but neither a Tool nor a function."""
    from ..tools import Tool

    return (
        callable(obj)
        and not isinstance(obj, Tool | type)
        and not (inspect.isfunction(obj) or inspect.ismethod(obj))
    )


def served_items(specs: tuple[str, ...]) -> list[Any]:
    """What ``SPEC``s name: built-in tools, ``module:attr`` / ``file.py:attr`` tools (as
    ``--tool`` reads them), or agents (served as one tool each).

    Raises:
        ConfigurationError: A spec names nothing servable.
    """
    from ._tools import _load, resolve_tools

    items: list[Any] = []
    for spec in specs:
        module, _, attr = spec.rpartition(":")
        if module:
            mod = _load(module)
            if not hasattr(mod, attr):
                raise ConfigurationError(f"mcp serve {spec}: {module!r} has no {attr!r}")
            obj = getattr(mod, attr)
            objs = list(obj) if isinstance(obj, list | tuple) else [obj]
            if objs and any(_is_agent(o) for o in objs):
                items.extend(objs)
                continue
        items.extend(resolve_tools([spec]))
    return items


@click.group("mcp")
def mcp_group() -> None:
    """Model Context Protocol: serve loopwright tools and agents to MCP clients.

    \b
    loopwright mcp serve tools.py:tools                  over stdio (for a client that starts it)
    loopwright mcp serve tools.py:agent --transport http --port 8000
    """


@mcp_group.command("serve")
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio (requests on stdin, answers on stdout) or Streamable HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: the address.")
@click.option("--port", default=8000, show_default=True, type=int, help="HTTP: the port.")
@click.option("--path", default="/mcp", show_default=True, help="HTTP: the endpoint's path.")
@click.option("--name", default="loopwright", show_default=True, help="The server's name.")
def serve_command(
    specs: tuple[str, ...], transport: str, host: str, port: int, path: str, name: str
) -> int:
    """Serve SPEC... as an MCP server: built-in tool names (bash, think...), or
    module:attr / file.py:attr naming a Tool, a list of Tools, a function (made a tool),
    or an agent (lw.react(...): served as one tool taking the task as `input`)."""
    from ..mcp import serve_mcp

    items = served_items(specs)
    try:
        asyncio.run(
            serve_mcp(
                items,
                transport="http" if transport == "http" else "stdio",
                host=host,
                port=port,
                path=path,
                name=name,
            )
        )
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK
