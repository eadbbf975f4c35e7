"""The replay model: answers with the outputs recorded in a run, in order.

    model = get_model("replay", run="c0be5d6b2031...")          # from the run store
    model = get_model("replay", run="run.json")                  # from an export
    model = get_model("replay/c0be5d6b2031", db="runs.db")       # the id as model name

Run the same agent on the same input with it and the run is reproduced offline: the
same assistant messages (with the same tool calls, so the tools run again with the same
arguments), deterministically. Outputs are taken in the order the recorded calls began,
so a run whose model calls ran in parallel replays in that recorded order.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from ..._errors import ConfigurationError, ModelError
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
        model_name: str = "",
        run: str | os.PathLike[str] | None = None,
        *,
        db: str | os.PathLike[str] | None = None,
        sample: str | None = None,
    ) -> None:
        """
        Args:
            model_name: The run id, if ``run`` is not given.
            run: The run: an id (or unique prefix) in the run store, or the path of a
                JSON export.
            db: The run store (default ``$LOOPWRIGHT_DB`` or ``./loopwright-runs.db``).
            sample: Replay this sample's model calls (a sample key or id) instead of the
                run's own.
        """
        source = run if run is not None else (model_name or None)
        if source is None:
            raise ConfigurationError(
                "replay model: say which run to replay, e.g. get_model('replay', run=RUN_ID) "
                "or get_model('replay', run='run.json')"
            )
        self.model_name = str(source)
        self._run = source
        self._db = db
        self._sample = sample
        self._outputs: list[ModelOutput] | None = None
        self._lock = asyncio.Lock()
        self._next = 0

    def _load(self) -> list[ModelOutput]:
        from ...log import load_run

        with load_run(self._run, self._db) as log:
            return log.model_outputs(self._sample)

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
                self._outputs = await asyncio.to_thread(self._load)
            if self._next >= len(self._outputs):
                raise ReplayExhaustedError(
                    f"replay model: run {self.model_name!r} recorded {len(self._outputs)} "
                    "model outputs and all were replayed; the agent asked for one more (did "
                    "the agent or its input change since the run was recorded?)"
                )
            recorded = self._outputs[self._next]
            self._next += 1
        output = recorded.model_copy(deep=True)
        # a new message (new id) with the recorded content and tool calls (same call ids)
        output.message.id = new_id()
        output.time = None
        return output
