"""The benchmark's workloads: a scripted agent of N steps, in loopwright and bare asyncio.

A *step* is one model call and the tool call it asks for. An agent of ``n`` steps calls
the trivial tool ``add`` ``n - 1`` times and then ``submit``, so it makes exactly ``n``
model calls. The scripted (mock) model replies in the format of the tool protocol under
test: native tool calls, or the text of the ``react`` / ``json`` protocols.
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

import loopwright as lw

Protocol = Literal["native", "react", "json"]

# tool call timestamps of the current run (growth measures the time between steps):
# (wall, process CPU) seconds
STAMPS: list[tuple[float, float]] = []
STAMP = False
# flat steps (_flat.py): the gate a tool call waits at while the other agent steps
GATE: Callable[[], Awaitable[None]] | None = None


@lw.tool
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    if STAMP:
        STAMPS.append((time.perf_counter(), time.process_time()))
    if GATE is not None:
        await GATE()
    return a + b


@lw.tool
def add_sync(a: int, b: int) -> int:
    """Add two integers (a sync tool: it runs in a worker thread).

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def script(steps: int, protocol: Protocol, tool: str = "add") -> list[lw.ModelOutput | str]:
    """The model's replies for an agent of ``steps`` steps: tool calls, then submit."""
    out: list[lw.ModelOutput | str] = []
    for i in range(steps - 1):
        args = {"a": i, "b": 1}
        if protocol == "native":
            out.append(lw.ModelOutput.for_tool_call(tool, args))
        elif protocol == "react":
            out.append(f"Thought: add.\nAction: {tool}\nAction Input: {json.dumps(args)}")
        else:
            action = {"thought": "add.", "action": {"name": tool, "arguments": args}}
            out.append(json.dumps(action))
    if protocol == "native":
        out.append(lw.ModelOutput.for_tool_call("submit", {"answer": "done"}))
    elif protocol == "react":
        out.append("Thought: done.\nFinal Answer: done")
    else:
        final = {"thought": "done.", "action": {"name": "finish", "arguments": {"answer": "done"}}}
        out.append(json.dumps(final))
    return out


@dataclass(frozen=True)
class Config:
    """One loopwright configuration to measure."""

    name: str
    protocol: Protocol = "native"
    store: bool = False
    display: bool = False
    sync_tool: bool = False
    transcript: bool = True


def display_cm(on: bool) -> AbstractContextManager[Any]:
    """The console display printing to a string buffer (rich does all its work)."""
    if not on:
        return nullcontext()
    from rich.console import Console

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    return lw.console_display(console)


class Runner:
    """Runs one configuration's agents; ``db`` is the run store file when it is on."""

    def __init__(self, config: Config, db: str | None) -> None:
        self.config = config
        self.db: str | Literal[False] = db if config.store and db else False
        tool = add_sync if config.sync_tool else add
        self.agent = lw.react(tools=[tool], max_steps=None)  # the runs set their own length
        self.tool_name = tool.name

    def model(self, steps: int) -> lw.Model:
        return lw.get_model(
            "mock",
            outputs=script(steps, self.config.protocol, self.tool_name),
            tool_protocol=self.config.protocol,
        )

    async def run(self, model: lw.Model) -> lw.AgentState:
        state = await lw.run(
            self.agent,
            "Add the numbers.",
            model=model,
            db=self.db,
            transcript=self.config.transcript,
        )
        if state.completed != "submit":
            raise RuntimeError(f"{self.config.name}: the agent ended with {state.completed!r}")
        return state

    async def time_one(self, steps: int) -> tuple[float, float]:
        """Wall and CPU seconds of one run of ``steps`` steps (the model is built first)."""
        model = self.model(steps)
        with display_cm(self.config.display):
            cpu, start = time.process_time(), time.perf_counter()
            await self.run(model)
            return time.perf_counter() - start, time.process_time() - cpu


# --- the floor: the same work in a bare asyncio loop, with dicts --------------------------
def floor_script(steps: int) -> list[dict[str, Any]]:
    calls = [("add", {"a": i, "b": 1}) for i in range(steps - 1)] + [("submit", {"answer": "x"})]
    return [
        {"role": "assistant", "tool_calls": [{"id": f"c{i}", "name": n, "arguments": a}]}
        for i, (n, a) in enumerate(calls)
    ]


async def floor_agent(replies: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """A bare agent loop: call the model, run the tools it asks for, stop at submit."""

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        reply = replies[len(messages) // 2]  # scripted, like the mock model
        return {**reply, "tool_calls": [dict(c) for c in reply["tool_calls"]]}

    async def add(a: int, b: int) -> int:
        return a + b

    tools: dict[str, Callable[..., Any]] = {"add": add}
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    while True:
        reply = await model(messages)
        messages.append(reply)
        for call in reply["tool_calls"]:
            if call["name"] == "submit":
                return messages
            result = await tools[call["name"]](**call["arguments"])
            messages.append({"role": "tool", "id": call["id"], "content": str(result)})


async def time_floor(steps: int, reps: int) -> tuple[float, float]:
    """Wall and CPU seconds of one floor run of ``steps`` steps (mean of ``reps``)."""
    scripts = [floor_script(steps) for _ in range(reps)]
    cpu, start = time.process_time(), time.perf_counter()
    for replies in scripts:
        messages = await floor_agent(replies, "Add the numbers.")
        assert len(messages) == 2 * steps, len(messages)
    return (time.perf_counter() - start) / reps, (time.process_time() - cpu) / reps


# --- the typed floor: the same loop with loopwright's pydantic message types -------------
async def typed_floor_agent(steps: int, task: str) -> list[lw.ChatMessage]:
    """The bare loop again, but every message is one of loopwright's types, made fresh per
    step as a provider would: a tool call, an assistant message, its usage and output, a
    tool message. No framework: what the typed data model alone costs."""

    async def model(messages: list[lw.ChatMessage]) -> lw.ModelOutput:
        i = len(messages) // 2
        name, args = ("add", {"a": i, "b": 1}) if i < steps - 1 else ("submit", {"answer": "x"})
        return lw.ModelOutput(
            message=lw.AssistantMessage(tool_calls=[lw.ToolCall(function=name, arguments=args)]),
            stop_reason="tool_calls",
            usage=lw.Usage(input_tokens=1, output_tokens=1, total_tokens=2),
        )

    async def add(a: int, b: int) -> int:
        return a + b

    tools: dict[str, Callable[..., Any]] = {"add": add}
    messages: list[lw.ChatMessage] = [lw.UserMessage(content=task)]
    while True:
        output = await model(messages)
        messages.append(output.message)
        for call in output.message.tool_calls:
            if call.function == "submit":
                return messages
            result = await tools[call.function](**call.arguments)
            messages.append(
                lw.ToolMessage(tool_call_id=call.id, function=call.function, content=str(result))
            )


async def time_typed_floor(steps: int, reps: int) -> tuple[float, float]:
    """Wall and CPU seconds of one typed floor run of ``steps`` steps (mean of ``reps``)."""
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(reps):
        messages = await typed_floor_agent(steps, "Add the numbers.")
        assert len(messages) == 2 * steps, len(messages)
    return (time.perf_counter() - start) / reps, (time.process_time() - cpu) / reps


def fresh_db(folder: str, name: str) -> str:
    path = os.path.join(folder, f"{name}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return path
