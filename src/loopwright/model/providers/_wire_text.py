"""Text to and from the wire that UTF-8 can carry: lone surrogates become U+FFFD.

JSON may escape a lone UTF-16 surrogate (``"\\ud800"``), which Python decodes into a
``str`` that UTF-8 cannot encode: kept as is, such a reply would fail later wherever it
is encoded (the next request's body, a terminal, a file). Replies are cleaned when they
arrive (:func:`valid_text`, one pass over the text); a request body that still cannot be
encoded (a surrogate from a tool's result, say) is cleaned and sent again
(:func:`valid_body`), so the normal path costs nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["valid_body", "valid_text"]


def valid_text(text: str) -> str:
    """``text``, with each lone surrogate replaced by U+FFFD (and a split surrogate pair
    joined into its character); ``text`` itself when there is none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_body(value: Any) -> Any:
    """A copy of the JSON-like ``value`` with :func:`valid_text` applied to every string
    (keys too)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_body(k): valid_body(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_body(v) for v in value]
    return value
