"""A hand-written agent loop over the scripted model (the run store's tests drive runs
without the agent package)."""

from __future__ import annotations

import loopwright as lw


@lw.tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    lw.store().get("sums", []).append(a + b)
    return a + b


def script(steps: int) -> list[lw.ModelOutput | str]:
    """``steps - 1`` tool calls, then a text answer."""
    outputs: list[lw.ModelOutput | str] = [
        lw.ModelOutput.for_tool_call("add", {"a": i, "b": 1}, content=f"step {i}")
        for i in range(steps - 1)
    ]
    outputs.append(f"done after {steps} steps")
    return outputs


async def hand_loop(
    model: lw.Model, *, max_steps: int = 10_000, prompt: str = "Count up."
) -> tuple[list[lw.ChatMessage], lw.ModelOutput]:
    """Generate, run tools, repeat until the model answers without tools."""
    messages: list[lw.ChatMessage] = [
        lw.SystemMessage(content="You count."),
        lw.UserMessage(content=prompt),
    ]
    out: lw.ModelOutput | None = None
    for _ in range(max_steps):
        out = await model.generate(messages, [add])
        messages.append(out.message)
        if not out.tool_calls:
            break
        messages.extend(await lw.execute_tools(out.message, [add]))
    assert out is not None
    return messages, out


def shape(messages: list[lw.ChatMessage]) -> list[tuple[object, ...]]:
    """What a conversation says, without message ids."""
    result: list[tuple[object, ...]] = []
    for m in messages:
        calls = tuple(
            (c.id, c.function, tuple(sorted(c.arguments.items())))
            for c in getattr(m, "tool_calls", [])
        )
        result.append((m.role, m.content, calls, getattr(m, "tool_call_id", None)))
    return result
