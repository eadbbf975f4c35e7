"""What an evaluation returns: per-sample results and per-task metrics."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .._errors import ConfigurationError, error_text
from ..limits import LimitInfo
from ._score import Score, Scorer

if TYPE_CHECKING:
    from ..agents import AgentState

__all__ = [
    "DONE",
    "SCORED",
    "EvalResult",
    "EvalStatus",
    "SampleResult",
    "SampleStatus",
    "carried_status",
    "check_fail_on_error",
    "compute_metrics",
    "mark_all_failed",
    "record_metrics",
    "sample_ending",
]

SampleStatus: TypeAlias = Literal["success", "limit", "stopped", "waiting", "error", "cancelled"]
EvalStatus: TypeAlias = Literal["success", "waiting", "cancelled", "error"]

SCORED = ("success", "limit", "stopped")
"""The statuses of a sample that is scored (with scorers): it ended, its answer as it
stood. A ``stopped`` sample is scored like a ``limit`` one: a hook that stops the hard
samples must not leave them out of the mean, lifting it."""
DONE = frozenset(SCORED)
"""The statuses of a sample that is done: a resume, a shard run again and a merge carry it
over rather than run it again (``waiting``: not done, it is continued or run again)."""


class SampleResult(BaseModel):
    """How one sample (in one epoch) went.

    Attributes:
        id: The sample's id.
        epoch: The epoch (from 1).
        status: ``success`` (ran and was scored), ``limit`` (a limit ended it; it is
            still scored), ``stopped`` (a hook raised :class:`~loopwright.StopRun`: it
            did not finish, and is scored as it stood, like ``limit``; :attr:`reason`
            says why), ``waiting`` (an approval policy deferred tool calls: it waits for a
            decision, has not ended and is not scored; a resume of the eval continues
            it, the task's approval policy asked again), ``error`` (it failed: not
            scored), ``cancelled``.
        scores: Each scorer's score, by scorer name.
        answer: The agent's final text.
        error: What went wrong, for ``error``.
        reason: Why it did not finish, for ``stopped`` (the hook's reason) and
            ``waiting`` (the deferred calls).
        limit: The limit that ended it, for ``limit``.
        tokens: Tokens its model calls used (the grader's included).
        time: Seconds it took.
        resumed: Carried over from the run given to ``resume=``, not run again.
    """

    model_config = ConfigDict(defer_build=True)

    id: str
    epoch: int = 1
    status: SampleStatus
    scores: dict[str, Score] = Field(default_factory=dict)
    answer: str | None = None
    error: str | None = None
    reason: str | None = None
    limit: LimitInfo | None = None
    tokens: int = 0
    time: float = 0.0
    resumed: bool = False


class EvalResult(BaseModel):
    """A task's evaluation: where it is recorded, every sample's result, the metrics,
    and how many samples the metrics stand for (:attr:`scored`) and how many failed
    (:attr:`errors`): a failed sample is not scored, so metrics over 1 scored sample of
    5 say nothing about the other 4.

    Attributes:
        task: The task's name.
        run_id: Its run in the run store (``loopwright runs show RUN_ID``); ``None``
            when nothing was stored (``db=False``, or the run could not be opened).
        db: The run store file (``None`` when nothing was stored).
        model: The model evaluated.
        status: ``success`` (every sample ran, some may have failed but not all),
            ``waiting`` (every sample ran, none failed all, but some wait for approval:
            the eval is not finished, its metrics are over the others; resume it),
            ``cancelled`` (stopped early: the samples that ran are kept), ``error``
            (the evaluation itself failed, or every sample that ran failed: it
            measured nothing; :attr:`error` says which). The run store records the
            same status, so ``runs list --status error`` finds both.
        total: Samples x epochs planned.
        samples: The results of the samples that ran, in the order they finished.
        metrics: ``{scorer: {metric: value}}`` over the scored samples, epochs averaged
            per sample first; a value is ``None`` when no sample was scored.
        error: What stopped the evaluation, for ``error``.
        started: When it started.
        duration: Seconds it took.
        params: The task's arguments.
        resumed_from: The run it resumed, if any.
    """

    model_config = ConfigDict(defer_build=True)

    task: str
    run_id: str | None = None
    db: str | None = None
    model: str | None = None
    status: EvalStatus = "success"
    total: int = 0
    samples: list[SampleResult] = Field(default_factory=list)
    metrics: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    error: str | None = None
    started: datetime
    duration: float = 0.0
    params: dict[str, object] = Field(default_factory=dict)
    resumed_from: str | None = None
    _opened: bool = PrivateAttr(default=False)

    @property
    def completed(self) -> int:
        """Samples that ran to an end (scored or failed; not those waiting for approval
        or cancelled)."""
        return sum(1 for s in self.samples if s.status not in ("cancelled", "waiting"))

    @property
    def scored(self) -> int:
        """Samples that were scored: the ones the metrics are over (``success``,
        ``limit`` and ``stopped`` samples of a task with scorers)."""
        return sum(1 for s in self.samples if s.status in SCORED and s.scores)

    @property
    def errors(self) -> int:
        """Samples that failed (raised): recorded with their error, not scored."""
        return sum(1 for s in self.samples if s.status == "error")

    @property
    def limits(self) -> int:
        """Samples ended by a limit."""
        return sum(1 for s in self.samples if s.status == "limit")

    @property
    def stopped(self) -> int:
        """Samples a hook stopped (``lw.StopRun``): scored as they stood, and counted
        with the failed ones by :meth:`too_many_errors`."""
        return sum(1 for s in self.samples if s.status == "stopped")

    @property
    def waiting(self) -> int:
        """Samples waiting for approval (an approval policy deferred calls): not scored,
        not finished; a resume of the eval continues them."""
        return sum(1 for s in self.samples if s.status == "waiting")

    @property
    def tokens(self) -> int:
        """Tokens used by the samples run (not those resumed)."""
        return sum(s.tokens for s in self.samples if not s.resumed)

    def too_many_errors(self, fail_on_error: bool | float = True) -> bool:
        """Whether the failed samples, with those a hook stopped (they did not finish
        their task either, as ``loopwright run`` exits 1 for a stopped run), reach the
        threshold ``fail_on_error`` (as in ``loopwright eval --fail-on-error``): ``True``
        (the default) any, ``False`` never, a number between 0 and 1 a share of the
        planned samples (``0.1``: 10% or more), a whole number from 1 up a count (``5``:
        five or more).

        Raises:
            ConfigurationError: Any other ``fail_on_error``.
        """
        threshold = check_fail_on_error(fail_on_error)
        failed = self.errors + self.stopped
        if threshold is True or threshold is False:
            return threshold and failed > 0
        if threshold < 1:
            return failed > 0 and failed >= threshold * self.total
        return failed >= threshold


def carried_status(status: str) -> SampleStatus:
    """The status a sample carried from another run keeps (done, or ``waiting``)."""
    for known in ("limit", "stopped", "waiting"):
        if status == known:
            return known
    return "success"


def sample_ending(state: AgentState) -> tuple[SampleStatus, str | None]:
    """How a sample whose run returned ``state`` ended, and why it did not finish: a
    limit, a hook's :class:`~loopwright.StopRun` (its reason), an approval policy's
    deferred calls (named, bounded), or ``success``."""
    if state.limit is not None:
        return "limit", None
    if state.completed == "stopped":
        return "stopped", state.error or "stopped by a hook"
    if state.completed == "waiting":
        calls = ", ".join(f"{p.call.function} ({p.call.id})" for p in state.pending[:10])
        more = f" and {len(state.pending) - 10} more" if len(state.pending) > 10 else ""
        return "waiting", f"waiting for approval of {calls or 'its calls'}{more}"[:1000]
    return "success", None


def check_fail_on_error(value: bool | float) -> bool | float:
    """``value`` if it is a valid ``fail_on_error`` threshold (see
    :meth:`EvalResult.too_many_errors`)."""
    if isinstance(value, bool):
        return value
    number = isinstance(value, (int, float)) and not math.isnan(value)
    if number and (0 < value < 1 or (value >= 1 and float(value).is_integer())):
        return value
    raise ConfigurationError(
        f"fail_on_error must be True, False, a share between 0 and 1 (0.1) or a whole "
        f"count from 1 up (5), got {value!r}"
    )


def compute_metrics(
    scorers: Sequence[Scorer],
    samples: Sequence[SampleResult],
    failures: list[str] | None = None,
) -> dict[str, dict[str, float | None]]:
    """Each scorer's metrics over the scored samples; a sample's epochs are averaged
    first, so every sample weighs the same. A metric is ``None`` (not ``nan``, which
    neither JSON nor a reader takes well) when no sample was scored or it is undefined.

    A metric that raises (``accuracy`` over a value of 5) raises, unless ``failures``
    is given: then it is ``None`` and why is appended to ``failures``, and the other
    metrics are still computed (the runner records them with the failure)."""
    out: dict[str, dict[str, float | None]] = {}
    for scorer in scorers:
        per_sample: dict[str, list[float]] = defaultdict(list)
        for s in samples:
            score = s.scores.get(scorer.name)
            if score is not None and s.status in SCORED:
                per_sample[s.id].append(score.value)
        values = [math.fsum(v) / len(v) for v in per_sample.values()]
        out[scorer.name] = row = {}
        for m in scorer.metrics:
            try:
                row[m.name] = _defined(m(values)) if values else None
            except Exception as ex:
                if failures is None:
                    raise
                row[m.name] = None
                failures.append(f"metric {m.name!r} of scorer {scorer.name!r}: {error_text(ex)}")
    return out


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def record_metrics(scorers: Sequence[Scorer], result: EvalResult) -> None:
    """``result``'s metrics; a metric that raised is ``None`` and, unless the evaluation
    failed already, ends it as ``error`` saying which (its samples and the other
    metrics are kept: the run's summary is still written)."""
    failures: list[str] = []
    result.metrics = compute_metrics(scorers, result.samples, failures)
    if failures and result.status != "cancelled" and result.error is None:
        result.status = "error"
        result.error = "; ".join(failures)[:2000]


def mark_all_failed(result: EvalResult) -> None:
    """An evaluation whose samples all failed measured nothing: it ends as ``error``
    (in the run store too), saying so and quoting the first failure. One that failed
    not all, with samples waiting for approval, ends as ``waiting``: it is not finished."""
    if result.status != "success":
        return
    if not result.errors or any(s.status not in ("error", "cancelled") for s in result.samples):
        if result.waiting:
            result.status = "waiting"
        return
    first = next(s for s in result.samples if s.status == "error")
    result.status = "error"
    result.error = (
        f"every sample failed ({result.errors} of {result.total}); the first, "
        f"{first.id!r}: {(first.error or 'failed')[:1000]}"
    )
