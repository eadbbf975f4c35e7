"""``SampleRecording``: one sample (dataset item) of a recorded run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._ids import new_id
from ..limits import LimitExceededError, LimitInfo
from ..model import ChatMessage
from ..stores import Store, store_context
from ..transcripts import Transcript, checkpoint_store, transcript_context
from ._outcome import Outcome, RunStatus, Sink, json_text

if TYPE_CHECKING:
    from ._recording import Recording

__all__ = ["SampleRecording"]


class SampleRecording:
    """One sample of a recorded run; see :meth:`Recording.sample`.

    Attributes:
        key: The sample's stream key in the run store (unique within the run).
        id: The dataset item's id.
        epoch: The epoch (repetition) number.
        transcript: The sample's transcript.
        store: The sample's store.
    """

    def __init__(
        self,
        run: Recording,
        id: str,
        epoch: int,
        input: Any,
        target: Any,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        self.run, self.id, self.epoch = run, id, epoch
        self.key = new_id()
        self.transcript = Transcript(log_level=run._log_level, subscribers=run._subscribers)
        self.store = Store()
        self._input, self._target, self._metadata = input, target, dict(metadata or {})
        self._outcome = Outcome()
        self._stack = contextlib.ExitStack()
        self.scores: dict[str, Any] | None = None
        writer = run._writer
        self._unsubscribe: Callable[[], None] | None = None
        if writer is not None:
            sink = Sink(writer, run.run_id, self.key, run._seq)
            self._unsubscribe = self.transcript.subscribe(sink.on_event, on_message=sink.on_message)

    async def __aenter__(self) -> SampleRecording:
        writer = self.run._writer
        if writer is not None:
            writer.execute(
                "INSERT INTO samples (run_id, key, id, epoch, status, created, input, target, "
                "metadata, store_id) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    self.run.run_id,
                    self.key,
                    self.id,
                    self.epoch,
                    time.time(),
                    json_text(self._input),
                    json_text(self._target),
                    json_text(self._metadata),
                    self.store.id,
                ),
            )
        self._stack.enter_context(store_context(self.store))
        self._stack.enter_context(transcript_context(self.transcript))
        return self

    def finish(
        self,
        *,
        output: Any = None,
        messages: Sequence[ChatMessage] | None = None,
        scores: Mapping[str, Any] | None = None,
        error: BaseException | str | None = None,
        limit: LimitInfo | LimitExceededError | None = None,
        status: RunStatus | None = None,
    ) -> None:
        """Say how the sample ended, with its scores (see :meth:`Recording.finish`)."""
        self.scores = dict(scores) if scores is not None else None
        self._outcome.set(
            self.transcript,
            status=status,
            output=output,
            messages=messages,
            error=error,
            limit=limit,
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._outcome.from_exception(self.transcript, exc)
            checkpoint_store(self.transcript)
        finally:
            self._stack.close()
        o, writer = self._outcome, self.run._writer
        if self._unsubscribe is not None:
            self._unsubscribe()
        if writer is not None:
            writer.execute(
                "UPDATE samples SET status = ?, finished = ?, output = ?, messages = ?, "
                'scores = ?, error = ?, "limit" = ? WHERE run_id = ? AND key = ?',
                (
                    o.status,
                    time.time(),
                    o.output,
                    o.messages,
                    json_text(self.scores),
                    o.error,
                    o.limit,
                    self.run.run_id,
                    self.key,
                ),
            )

    @property
    def status(self) -> RunStatus:
        """``running`` until :meth:`finish` is called or the block is left."""
        return self._outcome.status
