"""``CostTally``: what a run's (or sample's) model calls cost, summed as they end.

Each :class:`~loopwright.RunScope` installs one as a model hook, so every model call
made inside the scope counts, sub-agents' and agents used as tools included. A call whose
price is unknown (``ModelCall.cost is None``) is counted apart, never as 0.
"""

from __future__ import annotations

from ..model import ModelCall

__all__ = ["CostTally"]


class CostTally:
    """The dollars of the priced calls and the number of unpriced ones.

    Attributes:
        priced: Dollars of the calls whose price was known.
        priced_calls: How many calls had a known price.
        unpriced_calls: How many calls had none (their cost is not in ``priced``).
    """

    __slots__ = ("priced", "priced_calls", "unpriced_calls")

    def __init__(self) -> None:
        self.priced = 0.0
        self.priced_calls = 0
        self.unpriced_calls = 0

    @property
    def dollars(self) -> float | None:
        """The priced calls' dollars; ``None`` when calls were made and none was priced
        (nothing is known: not 0). 0.0 when no call was made."""
        if self.unpriced_calls and not self.priced_calls:
            return None
        return self.priced

    def before_generate(self, call: ModelCall) -> None:
        pass

    def after_generate(self, call: ModelCall) -> None:
        if call.output is None:  # a failed call: what the provider billed is not known
            return
        if call.cost is None:
            self.unpriced_calls += 1
        else:
            self.priced += call.cost
            self.priced_calls += 1
