"""``result_match()``: score an agent's typed result (``react(output=T)``) against the target."""

from __future__ import annotations

import json
from typing import Any

from ..agents import AgentState
from ._sample import Sample
from ._score import Score, Scorer

__all__ = ["result_match"]


def _plain(value: Any) -> Any:
    """A typed value as JSON data (a pydantic model or dataclass as a dict)."""
    from pydantic import TypeAdapter

    return TypeAdapter(type(value)).dump_python(value, mode="json")


def _matches(result: Any, target: Any, partial: bool) -> bool:
    if partial and isinstance(target, dict) and isinstance(result, dict):
        return all(k in result and _matches(result[k], v, partial) for k, v in target.items())
    return bool(result == target)


def result_match(*, partial: bool = True, name: str = "result_match") -> Scorer:
    """Score 1 when the typed result (``state.result``) equals a target, else 0.

    Each target is JSON (``'{"name": "Oslo", "population": 709000}'``, ``'42'``); a
    target that is not JSON is compared as a string. The result is compared as JSON data
    (a pydantic model or dataclass as its fields). A sample whose run gave no typed
    result scores 0.

    Args:
        partial: A target object only needs its own keys to match (nested too), so a
            target may name the fields that matter; False: the whole object must equal.
        name: The scorer's name.
    """

    def score(state: AgentState, sample: Sample) -> Score:
        if state.result is None:
            return Score(value=0.0, answer=None, explanation="the run gave no typed result")
        result = _plain(state.result)
        shown = json.dumps(result, ensure_ascii=False, default=str)
        for raw in sample.targets:
            try:
                target = json.loads(raw)
            except ValueError:
                target = raw
            if _matches(result, target, partial):
                return Score(value=1.0, answer=shown)
        return Score(value=0.0, answer=shown)

    return Scorer(score, name=name)
