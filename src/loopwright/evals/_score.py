"""``Score`` and ``Scorer``: how one sample's result is judged."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias, overload

from pydantic import BaseModel, ConfigDict, Field

from .._errors import ConfigurationError
from ..agents import AgentState
from ._metrics import Metric, accuracy, stderr
from ._sample import Sample

__all__ = ["SCORE_TIMEOUT", "Score", "ScoreFn", "Scorer", "scorer"]


class Score(BaseModel):
    """A sample's score from one scorer.

    Attributes:
        value: The score: 1.0 right, 0.0 wrong, between for partial credit (or any
            number, for scorers summarised with ``mean``).
        answer: The part of the output that was judged.
        explanation: Why (e.g. a grader model's reasoning).
        metadata: Anything else the scorer wants to keep.
    """

    model_config = ConfigDict(defer_build=True)

    value: float
    answer: str | None = None
    explanation: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


SCORE_TIMEOUT = 600.0
"""Seconds an async scorer (a grader model's call) may take by default: one that never
answers fails its sample rather than hold the eval open forever."""

ScoreResult: TypeAlias = Score | float | bool
ScoreFn: TypeAlias = Callable[[AgentState, Sample], ScoreResult | Awaitable[ScoreResult]]
"""``(state, sample) -> Score`` (sync or async); a number or bool becomes
``Score(value=...)`` with the output's text as the answer."""


class Scorer:
    """A named scoring function with the metrics that summarise it.

    Call it with the final :class:`~loopwright.AgentState` and the :class:`Sample`:
    ``score = await scorer(state, sample)``. Build one with :func:`scorer` or use a
    built-in (:func:`match`, :func:`includes`, :func:`pattern`, :func:`model_graded`).

    Attributes:
        name: The scorer's name (the key of its scores and metrics).
        metrics: Metrics over its values (default: accuracy and stderr).
        timeout: Seconds an async scoring function may take (default
            :data:`SCORE_TIMEOUT`); past them the sample fails.
    """

    def __init__(
        self,
        fn: ScoreFn,
        *,
        name: str | None = None,
        metrics: Sequence[Metric] | None = None,
        timeout: float | None = None,
    ) -> None:
        if not callable(fn):
            raise ConfigurationError(f"a scorer must be callable, got {type(fn).__name__}")
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if timeout is not None and not (number and 0 < timeout < 1e9):
            raise ConfigurationError(
                f"a scorer's timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.fn = fn
        self.timeout = timeout
        self.name = name or getattr(fn, "__name__", None) or "score"
        self.metrics = list(metrics) if metrics is not None else [accuracy(), stderr()]

    def __repr__(self) -> str:
        return f"Scorer({self.name!r})"

    async def __call__(self, state: AgentState, sample: Sample) -> Score:
        """The score of ``state`` for ``sample``.

        An async function has ``timeout`` seconds (default :data:`SCORE_TIMEOUT`) to
        answer (a sync one blocks the event loop: it cannot be cut short).

        Raises:
            TimeoutError: An async function took longer than that.
            ConfigurationError: The function returned something else than a Score, a
                number or a bool, or a value that is not finite (NaN, infinity): the
                sample fails rather than be scored with it.
        """
        result = self.fn(state, sample)
        if inspect.isawaitable(result):
            limit = self.timeout if self.timeout is not None else SCORE_TIMEOUT
            bound = asyncio.timeout(limit)
            try:
                async with bound:
                    result = await result
            except TimeoutError:
                if not bound.expired():
                    raise  # (the scorer's own)
                raise TimeoutError(
                    f"scorer {self.name!r} took longer than {limit:g} seconds"
                ) from None
        if isinstance(result, (bool, int, float)):
            result = Score(value=float(result), answer=state.text)
        if not isinstance(result, Score):
            raise ConfigurationError(
                f"scorer {self.name!r} returned a {type(result).__name__}; return a Score, "
                "a number or a bool"
            )
        if not math.isfinite(result.value):  # (one NaN would make every mean unknown)
            raise ConfigurationError(
                f"scorer {self.name!r} gave {result.value}: a score must be a finite number"
            )
        return result


@overload
def scorer(fn: ScoreFn, /) -> Scorer: ...
@overload
def scorer(
    *,
    name: str | None = None,
    metrics: Sequence[Metric] | None = None,
    timeout: float | None = None,
) -> Callable[[ScoreFn], Scorer]: ...
def scorer(
    fn: ScoreFn | None = None,
    /,
    *,
    name: str | None = None,
    metrics: Sequence[Metric] | None = None,
    timeout: float | None = None,
) -> Scorer | Callable[[ScoreFn], Scorer]:
    """Make a :class:`Scorer` from ``(state, sample) -> Score | float | bool``::

    @lw.scorer(metrics=[lw.mean()])
    def length(state, sample):
        return len(state.text)
    """

    def make(f: ScoreFn) -> Scorer:
        return Scorer(f, name=name, metrics=metrics, timeout=timeout)

    return make(fn) if fn is not None else make


def as_scorers(value: Scorer | ScoreFn | Sequence[Scorer | ScoreFn] | None) -> list[Scorer]:
    """Normalise a task's ``scorer=`` argument to a list of scorers with unique names."""
    if value is None:
        return []
    items = list(value) if isinstance(value, Sequence) else [value]
    scorers = [s if isinstance(s, Scorer) else Scorer(s) for s in items]
    names = [s.name for s in scorers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigurationError(
            f"scorer names must be unique within a task; repeated: {', '.join(dupes)} "
            "(give one a name=)"
        )
    return scorers
