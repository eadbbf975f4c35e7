"""What limits say: their messages, and the check that a count is a whole number."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from ._errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_STEPS_NOTE",
    "LimitInfo",
    "LimitType",
    "limit_message",
    "unpriced",
    "whole_count",
]

DEFAULT_MAX_STEPS = 25
"""The step bound of the standard agents when nobody chose one (see ``limits``'s
docstring for when it applies). Other frameworks use 10-25; raise it for long tasks."""

DEFAULT_STEPS_NOTE = "the default bound; set max_steps to raise it, or max_steps=None to lift it"
"""Added to the message of the default step bound, so that a user who never set one
learns where it came from."""

LimitType: TypeAlias = Literal["step", "message", "token", "time", "working", "cost"]


class LimitInfo(BaseModel):
    """Which limit ended a run, and where it stood."""

    model_config = ConfigDict(defer_build=True)

    type: LimitType
    limit: float
    value: float
    message: str


def _amount(value: float, unit: str) -> str:
    if float(value).is_integer():
        return f"{int(value):,} {unit}"
    return f"{value:,.1f} {unit}"


def limit_message(type: str, limit: float, value: float) -> str:
    """What a reached limit says: which limit and what was reached, plainly ("step limit
    reached: 5 steps", "token limit reached: 1,020 tokens used (limit 1,000)").
    ``value`` is where the run stood: steps made, messages the refused call would have
    sent, tokens used, seconds elapsed; the limit is added when it differs."""
    if type == "step":
        text = f"step limit reached: {_amount(value, 'steps')}"
    elif type == "message":
        text = f"message limit reached: the next call would send {_amount(value, 'messages')}"
    elif type == "token":
        text = f"token limit reached: {_amount(value, 'tokens')} used"
    elif type == "cost":
        return f"cost limit reached: ${value:,.4f} spent (limit ${limit:,.4f})"
    else:
        what = "working time limit reached" if type == "working" else "time limit reached"
        done = "worked" if type == "working" else "elapsed"
        return f"{what}: {value:,.{1 if value >= 10 else 2}f} s {done} (limit {limit:,g} s)"
    return text if value == limit else f"{text} (limit {_amount(limit, '').strip()})"


def whole_count(value: object, type: str, unit: str) -> None:
    """Refuse a count that is a number but not a whole one (``Limit`` checks the rest)."""
    if isinstance(value, float) and value == value and not value.is_integer():
        raise ConfigurationError(f"{type} limit must be a whole number of {unit}, got {value}")


def unpriced(model: str, why: str) -> str:
    """What a cost limit says of a model whose calls it cannot count (``why``: it "has
    no known price", or "reported no token usage")."""
    return (
        f"the model {model!r} {why}, so its cost cannot be counted; price it with "
        f"lw.set_price({model!r}, input=..., output=...) (dollars per million tokens)"
    )
