"""What a model call costs: a price table shipped as data (``prices.json``), the user's.

``cost_of(model, usage)`` is the dollars of one call (or of a sum of usages), or
``None`` when the model's price is not known — never 0 for an unknown model. Input
tokens that were read from or written to the provider's prompt cache are priced at the
cache rates when the table has them (both providers count them in ``input_tokens`` as
well). Reasoning tokens are output tokens (the providers count them there).

A model is found by its full name (``openai/gpt-4o-mini``), then by the longest listed
name it extends with ``-`` (a dated variant: ``openai/gpt-4o-mini-2024-07-18``), then by
its provider alone (``local``, ``mock``: free). :func:`set_price` adds or replaces one.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from ._output import Usage

__all__ = ["Price", "cost_of", "price_of", "set_price"]

_PER = 1_000_000


class Price(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    """Input read from the prompt cache (default: the input price)."""
    cache_write: float | None = Field(default=None, ge=0)
    """Input written to the prompt cache (default: the input price)."""


_user: dict[str, Price] = {}
_found: dict[str, Price | None] = {}  # price_of's answers, forgotten when a price is set


@functools.cache
def _shipped() -> dict[str, Price]:
    text = resources.files("loopwright.model").joinpath("prices.json").read_text("utf-8")
    return {name: Price(**p) for name, p in json.loads(text)["prices"].items()}


def set_price(model: str, price: Price | None = None, **per_million: float) -> None:
    """Price ``model`` (``provider/model`` or a provider): ``set_price("openai/my-ft",
    input=0.3, output=1.2)``, or a :class:`Price`; ``None`` with no rates removes the
    user's price (the shipped one, if any, applies again)."""
    _found.clear()
    if price is None and not per_million:
        _user.pop(model, None)
        return
    _user[model] = price if price is not None else Price(**per_million)


def price_of(model: str) -> Price | None:
    """The price of ``model``, or ``None`` when it is not known."""
    try:
        return _found[model]  # (every model call asks: a dict lookup after the first)
    except KeyError:
        pass
    if len(_found) > 10_000:
        _found.clear()
    price = _found[model] = _lookup(model)
    return price


def _lookup(model: str) -> Price | None:
    for table in (_user, _shipped()):
        if model in table:
            return table[model]
    for table in (_user, _shipped()):
        prefixes = [n for n in table if model.startswith(n + "-")]
        if prefixes:
            return table[max(prefixes, key=len)]
    provider = model.split("/", 1)[0]
    return _user.get(provider) or _shipped().get(provider)


def cost_of(model: str, usage: Usage | None) -> float | None:
    """Dollars for ``usage`` of ``model``; ``None`` when its price or usage is unknown."""
    price = price_of(model)
    if price is None or usage is None:
        return None
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    fresh = max(0, usage.input_tokens - read - write)
    dollars = (
        fresh * price.input
        + read * (price.cache_read if price.cache_read is not None else price.input)
        + write * (price.cache_write if price.cache_write is not None else price.input)
        + usage.output_tokens * price.output
    ) / _PER
    if not dollars:  # a free model (or no tokens): the one constant 0.0, not a new float
        return 0.0  # per call (a live run keeps every call's cost in its model event)
    return dollars if math.isfinite(dollars) else None
