"""Following an evaluation: the :class:`EvalProgress` protocol, a progress that shows
nothing, and the model hook counting a sample's tokens for it."""

from __future__ import annotations

from typing import Protocol

from ..model import ModelCall
from ._results import EvalResult, SampleResult
from ._task import Task

__all__ = ["EvalProgress", "Quiet", "TokenCounter"]


class EvalProgress(Protocol):
    """Follows an evaluation (the CLI's progress bar is one). Methods are called on the
    event loop's thread and must be quick."""

    def task_started(self, task: Task, result: EvalResult, pending: int) -> None:
        """A task's run opened: ``result.total`` planned, ``pending`` still to run (the
        rest were resumed, already in ``result.samples``)."""

    def tokens_used(self, tokens: int) -> None:
        """A model call of some sample used ``tokens``."""

    def sample_finished(self, result: SampleResult) -> None:
        """A sample ended (scored, failed or limited)."""

    def task_finished(self, result: EvalResult) -> None:
        """A task ended (also when cancelled or failed)."""


class Quiet:
    def task_started(self, task: Task, result: EvalResult, pending: int) -> None:
        pass

    def tokens_used(self, tokens: int) -> None:
        pass

    def sample_finished(self, result: SampleResult) -> None:
        pass

    def task_finished(self, result: EvalResult) -> None:
        pass


class TokenCounter:
    """A model hook counting one sample's tokens."""

    def __init__(self, progress: EvalProgress) -> None:
        self.total = 0
        self._progress = progress

    def before_generate(self, call: ModelCall) -> None:
        pass

    def after_generate(self, call: ModelCall) -> None:
        if call.output is not None and call.output.usage is not None:
            n = call.output.usage.total_tokens
            self.total += n
            self._progress.tokens_used(n)
