"""Metrics: one number summarising a scorer's values over the samples."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .._errors import ConfigurationError

__all__ = ["Metric", "accuracy", "mean", "stderr"]


class Metric:
    """A named summary of score values: ``metric(values) -> float``.

    The built-ins are :func:`accuracy`, :func:`mean` and :func:`stderr`; make your own
    with ``Metric("median", statistics.median)``.
    """

    def __init__(self, name: str, fn: Callable[[Sequence[float]], float]) -> None:
        self.name = name
        self._fn = fn

    def __repr__(self) -> str:
        return f"Metric({self.name!r})"

    def __call__(self, values: Sequence[float]) -> float:
        """The metric over ``values`` (``nan`` when there are none)."""
        if not values:
            return math.nan
        return float(self._fn(values))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _accuracy(values: Sequence[float]) -> float:
    bad = [v for v in values if not 0.0 <= v <= 1.0]
    if bad:
        raise ConfigurationError(
            f"accuracy needs score values between 0 and 1 (correct = 1), got {bad[0]}; "
            "use mean() for other scales"
        )
    return _mean(values)


def _stderr(values: Sequence[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    m = _mean(values)
    variance = math.fsum((v - m) ** 2 for v in values) / (n - 1)
    return math.sqrt(variance / n)


def accuracy() -> Metric:
    """The share of correct answers: the mean of values between 0 (wrong) and 1 (right);
    partial credit counts as its fraction."""
    return Metric("accuracy", _accuracy)


def mean() -> Metric:
    """The mean of the values, whatever their scale."""
    return Metric("mean", _mean)


def stderr() -> Metric:
    """The standard error of the mean: sample standard deviation / sqrt(n)."""
    return Metric("stderr", _stderr)
