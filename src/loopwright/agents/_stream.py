"""``run_stream()``: run an agent and read what happens as it happens.

::

    async with lw.run_stream(agent, "task", model=...) as events:
        async for event in events:
            if isinstance(event, lw.TextDelta):
                print(event.text, end="", flush=True)

The run is :func:`~loopwright.run` itself, in a task of its own: every model call
streams its deltas to the run's :class:`~loopwright.agents._stream_events.EventBuffer`
(:func:`~loopwright.model._stream.stream_to`), and a run hook puts the tool calls, model
replies and steps there; the run store records the same run as a non-streamed one.
The last event is :class:`RunFinished` with the final state; an error of the run is
raised from the iteration after the events before it.

Leaving early (``break``, an exception in the loop body, the consumer's task
cancelled) cancels the run and waits for it to wind down (its sandbox cleaned up, its
worker threads finished), so it is recorded as ``cancelled``. Leaving ``async with`` (or
calling :meth:`RunStream.aclose`) does this at once; a bare ``async for`` that breaks
leaves it to the garbage collector and the event loop, as for any async generator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from types import TracebackType
from typing import Any

from .._errors import ConfigurationError
from ..model import ChatMessage, ModelOutput, ToolCall, ToolMessage, UserMessage
from ..model._stream import stream_to
from ._lifecycle import Hooks, check_hooks
from ._run import run
from ._state import Agent, AgentState
from ._stream_events import (
    DEFAULT_MAX_EVENTS,
    EventBuffer,
    ModelReplied,
    RunFinished,
    StepFinished,
    StreamEvent,
    ToolCallFinished,
    ToolCallStarted,
)

__all__ = ["RunStream", "run_stream"]


class _StreamHooks(Hooks):
    """Puts a run's tool calls, model replies and steps in its buffer (the run's last
    hook, so a call another hook denied never shows as started, and a result is shown
    as the other hooks left it)."""

    def __init__(self, buffer: EventBuffer) -> None:
        self._buffer = buffer
        self._steps = 0

    async def after_model(self, output: ModelOutput) -> None:
        await self._buffer.put(ModelReplied(output))

    async def before_tool(self, call: ToolCall) -> str | None:
        await self._buffer.put(ToolCallStarted(call))
        return None

    async def after_tool(self, call: ToolCall, result: ToolMessage) -> ToolMessage | None:
        await self._buffer.put(ToolCallFinished(call, result))
        return None

    async def on_step_end(self, state: AgentState) -> None:
        self._steps += 1
        await self._buffer.put(StepFinished(self._steps, state))


class RunStream:
    """The events of a streamed run: an async iterator and an async context manager.

    Attributes:
        state: The run's state: the final one once :class:`RunFinished` came, else the
            state as far as the run got (after an early exit, a cancelled run's).
    """

    def __init__(
        self, agent: Agent, state: AgentState, kwargs: dict[str, Any], max_events: int
    ) -> None:
        self.state = state
        self._buffer = EventBuffer(max_events)
        self._agent, self._kwargs = agent, kwargs
        self._task: asyncio.Task[AgentState] | None = None
        self._events = self._generate()

    async def _run(self) -> AgentState:
        with stream_to(self._buffer.put_delta):
            return await run(self._agent, self.state, **self._kwargs)

    async def _generate(self) -> AsyncGenerator[StreamEvent, None]:
        task = self._task = asyncio.create_task(self._run())
        task.add_done_callback(lambda _: self._buffer.close())
        try:
            while (event := await self._buffer.get()) is not None:
                yield event
            self.state = await task
            yield RunFinished(self.state)
        finally:
            self._buffer.close()
            if not task.done():
                task.cancel()
                # the run winds down (sandbox, threads) before the consumer goes on
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        return await anext(self._events)

    async def aclose(self) -> None:
        """Stop reading: a run still going is cancelled, and waited for."""
        await self._events.aclose()
        task = self._task
        if task is not None and not task.done():  # pragma: no cover - closed above
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    @property
    def cancelled(self) -> bool:
        """Whether the run was cancelled (the consumer left before it ended)."""
        return self._task is not None and self._task.cancelled()

    async def __aenter__(self) -> RunStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def run_stream(
    agent: Agent,
    input: str | Sequence[ChatMessage] | AgentState,
    *,
    hooks: Sequence[Hooks] = (),
    max_events: int = DEFAULT_MAX_EVENTS,
    **kwargs: Any,
) -> RunStream:
    """Run ``agent`` on ``input`` like :func:`~loopwright.run`, yielding its events.

    Takes :func:`~loopwright.run`'s arguments. The events: :class:`TextDelta` and
    :class:`ReasoningDelta` as the model writes, :class:`ModelReplied` when a model
    call ends, :class:`ToolCallStarted` / :class:`ToolCallFinished` around each tool
    call, :class:`StepFinished`, and last :class:`RunFinished` with the final state.
    ``max_events`` bounds the buffer (see
    :mod:`loopwright.agents._stream_events` for what happens when it is full). See the
    module documentation for leaving early.
    """
    if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
        raise ConfigurationError(f"run_stream: max_events must be an int >= 1, got {max_events!r}")
    own = check_hooks(hooks, "run_stream")
    if isinstance(input, str):
        state = AgentState(messages=[UserMessage(content=input)])
    elif isinstance(input, AgentState):
        state = input
    elif isinstance(input, Sequence):
        state = AgentState(messages=list(input))
    else:
        raise ConfigurationError(
            "run_stream: input must be a string, a list of messages or an AgentState, not "
            f"{type(input).__name__}"
        )
    buffer_hooks: list[Hooks] = [*own]
    stream = RunStream(agent, state, kwargs, max_events)
    buffer_hooks.append(_StreamHooks(stream._buffer))
    kwargs["hooks"] = buffer_hooks
    return stream
