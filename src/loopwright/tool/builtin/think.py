"""``think``: a scratchpad tool that lets the model reason without acting."""

from __future__ import annotations

from .._tool import tool

__all__ = ["think"]


@tool(parallel=True, defer=True)
def think(thought: str) -> str:
    """Think about something before acting: plan, check your reasoning, weigh options.

    This fetches no information and changes nothing; it only records the thought. Use it
    when a problem needs several steps of reasoning, to check a plan against the rules
    you were given, or to make sense of what tools returned.

    Args:
        thought: Your thinking, in as much detail as helps.
    """
    return ""


think._inline = True  # it only returns: no worker thread
