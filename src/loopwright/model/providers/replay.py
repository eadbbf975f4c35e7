"""The replay model: answers with the outputs recorded in a run, in order.

    model = get_model("replay", run="c0be5d6b2031...")          # from the run store
    model = get_model("replay", run="run.json")                  # from an export
    model = get_model("replay/c0be5d6b2031", db="runs.db")       # the id as model name

:class:`ReplayModelAPI` replays outputs it is given (or a function that loads them, called
once, in a worker thread, on the first call). Reading a run's recorded outputs is the run
store's business: the ``replay`` provider is registered as ``loopwright.log._replay:
replay_model``, which loads them from a run store or an export and builds this class, so
``model/`` never imports ``log/`` (the parts' order, ``tests/test_layers.py``).

Run the same agent on the same input with it and the run is reproduced offline: the
same assistant messages (with the same tool calls, so the tools run again with the same
arguments), deterministically. Outputs are taken in the order the recorded calls began,
so a run whose model calls ran in parallel replays in that recorded order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..._errors import ModelError
from ..._ids import new_id
from .._api import ModelAPI
from .._chat import ChatMessage, ToolInfo
from .._config import GenerateConfig
from .._output import ModelOutput

__all__ = ["ReplayExhaustedError", "ReplayModelAPI"]


class ReplayExhaustedError(ModelError):
    """The replayed run has no more recorded outputs."""


class ReplayModelAPI(ModelAPI):
    """Replays a recorded run's model outputs. See the module documentation."""

    provider = "replay"
    supports_tools = True

    def __init__(
        self,
        model_name: str,
        outputs: Sequence[ModelOutput] | Callable[[], Sequence[ModelOutput]],
    ) -> None:
        """
        Args:
            model_name: What the replayed run is called (its id or export path), for
                messages.
            outputs: The recorded outputs, in order, or a function returning them (called
                on the first call, in a worker thread, so a slow read never blocks the
                event loop and a missing run is reported by that call).
        """
        self.model_name = model_name
        self._load: Callable[[], Sequence[ModelOutput]] | None = None
        self._outputs: list[ModelOutput] | None = None
        if callable(outputs):
            self._load = outputs
        else:
            self._outputs = list(outputs)
        self._lock = asyncio.Lock()
        self._next = 0

    @property
    def remaining(self) -> int | None:
        """Recorded outputs not replayed yet (``None`` before the first call)."""
        return None if self._outputs is None else len(self._outputs) - self._next

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolInfo],
        config: GenerateConfig,
    ) -> ModelOutput:
        async with self._lock:
            if self._outputs is None:
                assert self._load is not None
                self._outputs = list(await asyncio.to_thread(self._load))
            if self._next >= len(self._outputs):
                raise ReplayExhaustedError(
                    f"replay model: run {self.model_name!r} recorded {len(self._outputs)} "
                    "model outputs and all were replayed; the agent asked for one more (did "
                    "the agent or its input change since the run was recorded?)"
                )
            recorded = self._outputs[self._next]
            self._next += 1
        # a new message (new id) with the recorded content and tool calls (same call ids);
        # the copy shares nothing mutable with the recording (the loop sets fields of it)
        usage = recorded.usage
        return replace(
            recorded,
            message=recorded.message.model_copy(update={"id": new_id()}, deep=True),
            usage=replace(usage) if usage is not None else None,
            time=None,
        )
