"""Prices: known models cost what the table says, unknown ones say so (None, not 0)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

import loopwright as lw
from loopwright.model._prices import Price, cost_of, price_of, set_price


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    for name in ("openai/my-finetune", "openai/gpt-4o", "acme"):
        set_price(name)


def test_a_known_model_and_its_dated_variant() -> None:
    usage = lw.Usage(input_tokens=1_000_000, output_tokens=500_000, total_tokens=1_500_000)
    assert cost_of("openai/gpt-4o-mini", usage) == pytest.approx(0.15 + 0.30)
    assert cost_of("openai/gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.45)
    # the longest listed prefix wins: gpt-4o-mini is not priced as gpt-4o
    assert price_of("openai/gpt-4o-mini-2024-07-18") == price_of("openai/gpt-4o-mini")


def test_cached_input_is_priced_at_the_cache_rates() -> None:
    usage = lw.Usage(
        input_tokens=1_000_000,
        output_tokens=0,
        total_tokens=1_000_000,
        cache_read_tokens=600_000,
        cache_write_tokens=100_000,
    )
    # 300k fresh at 3.00, 600k read at 0.30, 100k written at 3.75
    assert cost_of("anthropic/claude-sonnet-4", usage) == pytest.approx(0.9 + 0.18 + 0.375)


def test_unknown_models_have_no_cost_and_free_ones_cost_zero() -> None:
    usage = lw.Usage(input_tokens=10, output_tokens=10, total_tokens=20)
    assert cost_of("openai/some-model-nobody-priced", usage) is None
    assert cost_of("acme/x", usage) is None
    assert cost_of("mock", usage) == 0.0 and cost_of("local/smollm2", usage) == 0.0
    assert cost_of("openai/gpt-4o", None) is None


def test_every_free_call_s_cost_is_the_one_constant_zero() -> None:
    """A live run keeps each call's cost: a free call's is one shared float, not its own
    (bench/README.md, round 4); a priced call with no tokens costs 0.0 too."""
    usages = [lw.Usage(input_tokens=n, output_tokens=n, total_tokens=2 * n) for n in (3, 5)]
    costs = [cost_of("mock", u) for u in usages]
    assert costs == [0.0, 0.0] and costs[0] is costs[1]
    assert math.copysign(1.0, costs[0]) == 1.0  # (+0.0, not -0.0)
    empty = lw.Usage(input_tokens=0, output_tokens=0, total_tokens=0)
    assert cost_of("openai/gpt-4o-mini", empty) == 0.0
    assert cost_of("openai/gpt-4o-mini", usages[0]) not in (None, 0.0)


def test_the_user_prices_and_unprices() -> None:
    usage = lw.Usage(input_tokens=2_000_000, output_tokens=1_000_000, total_tokens=3_000_000)
    set_price("openai/my-finetune", input=0.3, output=1.2)
    assert cost_of("openai/my-finetune", usage) == pytest.approx(0.6 + 1.2)
    set_price("openai/gpt-4o", Price(input=1, output=1))
    assert cost_of("openai/gpt-4o", usage) == pytest.approx(3.0)
    set_price("openai/gpt-4o")
    assert cost_of("openai/gpt-4o", usage) == pytest.approx(5.0 + 10.0)
    set_price("acme", input=1, output=0)
    assert cost_of("acme/anything", usage) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        set_price("bad", input=-1, output=0)
