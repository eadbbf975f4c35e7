"""``with_mcp()``: an agent whose runs start the MCP servers they use and stop them after."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from contextlib import AsyncExitStack
from typing import Any

from loopwright._errors import ConfigurationError
from loopwright.agents import Agent, AgentState, Hooks, ModelRequest
from loopwright.agents._lifecycle import run_hooks
from loopwright.mcp._client import MCPServer
from loopwright.mcp._connection import MCPServerError

__all__ = ["MCPAgent", "with_mcp"]


class MCPAgent:
    """``agent`` with the tools of MCP servers; see :func:`with_mcp`."""

    def __init__(self, agent: Agent, servers: tuple[MCPServer, ...]) -> None:
        self.agent = agent
        self.servers = servers
        self.name: str = str(getattr(agent, "name", None) or getattr(agent, "__name__", "agent"))
        self.description: str = str(getattr(agent, "description", "") or "")

    def __repr__(self) -> str:
        return f"with_mcp({self.agent!r}, {', '.join(s.name for s in self.servers)})"

    async def __call__(self, state: AgentState) -> AgentState:
        async with AsyncExitStack() as stack:
            listed: list[list[Any]] = []
            for server in self.servers:
                await stack.enter_async_context(server)
                listed.append(await server.tools())
            extra = _first_of_each_name(self.servers, listed, {t.name for t in state.extra_tools})
            state.extra_tools.extend(extra)
            stack.callback(_remove, state, extra)
            refresh = _Refresh(self.servers, state, extra)
            stack.enter_context(run_hooks((refresh,)))
            try:
                return await self.agent(state)
            except asyncio.CancelledError:
                # stop the servers even though this task is being cancelled
                await asyncio.shield(stack.aclose())
                raise


class _Refresh(Hooks):
    """Picks up a server's changed tools at the next step of the run's own agent: its
    tool list (``state.tools``, the list its calls run against) is changed in place,
    and the model is offered the new list."""

    def __init__(self, servers: tuple[MCPServer, ...], state: AgentState, tools: list[Any]):
        self.servers, self.state = servers, state
        self.current: list[Any] = list(tools)
        self.removed: list[Any] = []

    async def on_step_start(self, state: AgentState) -> None:
        if state is not self.state or not any(s.tools_changed for s in self.servers):
            return
        own = {t.name for t in state.tools if not any(t is c for c in self.current)}
        try:
            listed = [await s.tools() for s in self.servers]
        except (MCPServerError, TimeoutError) as ex:
            # the run goes on with the tools it has (their calls say what is wrong);
            # the server's tools are still stale: the next step lists them again
            from loopwright.transcripts import current_transcript

            t = current_transcript()
            if t is not None:
                t.info(f"The MCP tools were not listed again: {ex}", source="mcp")
            return
        fresh = _first_of_each_name(self.servers, listed, own)
        self.removed = [t for t in self.current if not any(t is f for f in fresh)]
        gone = {id(t) for t in self.removed}
        state.tools[:] = [t for t in state.tools if id(t) not in gone]
        state.tools.extend(t for t in fresh if not any(t is c for c in self.current))
        self.current = fresh

    async def before_model(self, request: ModelRequest) -> ModelRequest | None:
        if request.messages is not self.state.messages or not (self.removed or self.current):
            return None  # another agent of the run (one used as a tool)
        offered = [t for t in request.tools if not any(t is r for r in self.removed)]
        names = {t.name for t in offered}  # the agent's own win a name a server uses too
        offered += [t for t in self.current if t.name not in names]
        if len(offered) == len(request.tools) and all(
            a is b for a, b in zip(offered, request.tools, strict=True)
        ):
            return None
        return dataclasses.replace(request, tools=offered)


def _first_of_each_name(
    servers: tuple[MCPServer, ...], listed: list[list[Any]], taken: set[str]
) -> list[Any]:
    """The servers' tools whose name is not ``taken``, the first server's where two
    servers list one name (with a warning): a run refuses two tools of one name."""
    found: dict[str, str] = {}
    out = []
    for server, tools in zip(servers, listed, strict=True):
        for t in tools:
            if t.name in taken:
                continue
            if t.name in found:
                warnings.warn(
                    f"MCP server {server.name!r}: tool {t.name!r} is left out: server "
                    f"{found[t.name]!r} has one of that name (give one a prefix=)",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            found[t.name] = server.name
            out.append(t)
    return out


def _remove(state: AgentState, tools: list[Any]) -> None:
    ids = {id(t) for t in tools}
    state.extra_tools = [t for t in state.extra_tools if id(t) not in ids]


def with_mcp(agent: Agent, *servers: MCPServer) -> MCPAgent:
    """``agent``, offered the tools of ``servers`` beside its own (the agent's own win a
    name both use, and the first server's a name two servers use), each server started
    when a run starts and stopped when it ends, however it ends (an answer, an error, a
    limit, a cancellation) — unless the server is also held by an ``async with`` block
    or another run, which keeps it running::

        agent = lw.with_mcp(lw.react(), lw.mcp_server(["mcp-server-time"]))
        lw.run_sync(agent, "What time is it in Tokyo?")

    The tool list is read when each run starts; when a server says its tools changed
    (``tools/list_changed``), the agent is offered the new list from its next step (a
    server that cannot list them then leaves the run its tools, and the step after that
    tries again).
    """
    for s in servers:
        if not isinstance(s, MCPServer):
            raise ConfigurationError(f"with_mcp: {s!r} is not an MCP server (lw.mcp_server(...))")
    if not callable(agent):
        raise ConfigurationError(f"with_mcp: {agent!r} is not an agent")
    return MCPAgent(agent, servers)
