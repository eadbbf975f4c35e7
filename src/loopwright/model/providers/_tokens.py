"""Token counts from the wire, checked: a server's usage is untrusted like its text.

A count that is negative (``-1`` for "unknown", from some servers), not a whole number,
not finite (JSON's ``1e400`` reads as infinity) or beyond :data:`MAX_TOKENS` is no count:
kept, it would break what adds counts up (a negative one takes other calls' tokens off a
token limit's total; an infinite one raises ``OverflowError`` where it is converted, a
400-digit one where it is priced). The providers then report the reply's usage as
unknown (``None``), as when the server sends none; the reply itself is kept.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_TOKENS", "optional_count", "token_count"]

MAX_TOKENS = 2**53 - 1
"""The largest count believed (what a float, JSON and SQLite all hold exactly)."""


def token_count(value: Any) -> int:
    """``value`` as a token count; a missing one (None) is 0.

    Raises:
        ValueError: ``value`` is not a count (see the module documentation).
    """
    count = optional_count(value)
    return 0 if count is None else count


def optional_count(value: Any) -> int | None:
    """``value`` as a token count, None when it is missing.

    Raises:
        ValueError: ``value`` is not a count (see the module documentation).
    """
    if value is None:
        return None
    if isinstance(value, str):  # (a number in a string: some servers send those)
        value = int(value) if len(value) <= 20 else -1
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a token count must be a number, got {type(value).__name__}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError(f"a token count must be a whole number, got {value!r}")
    if not 0 <= value <= MAX_TOKENS:
        raise ValueError(f"a token count must be from 0 to {MAX_TOKENS}, got {str(value)[:40]}")
    return int(value)
