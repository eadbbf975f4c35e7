"""A tool's return value as text for the model, and middle truncation of long output."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["result_text", "truncate_output"]


def result_text(value: Any) -> str:
    """The text the model reads for a tool's return value.

    ``str`` as it is; ``None`` as ``""``; ``bytes`` decoded as UTF-8 (invalid bytes
    replaced); numbers, booleans, lists, tuples, sets, dicts, pydantic models and
    dataclass instances as JSON; anything else via ``str()``.
    """
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)  # what JSON would say, without the encoder
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, bool | int | float | list | tuple | set | frozenset | dict) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        return _to_json(value)
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return _to_json(value)
    return str(value)


def _to_json(value: Any) -> str:
    from pydantic_core import PydanticSerializationError, to_json

    try:
        return to_json(value, fallback=str, inf_nan_mode="constants").decode("utf-8")
    except (PydanticSerializationError, ValueError, TypeError):
        return str(value)


def _marker(removed_bytes: int, removed_lines: int) -> str:
    lines = f" ({removed_lines:,} lines)" if removed_lines else ""
    return f"\n\n[... {removed_bytes:,} bytes{lines} truncated from the middle ...]\n\n"


# how far (in bytes) a cut may move to land on a line break
_LINE_SLACK = 256


def truncate_output(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes, keeping its head and tail.

    The middle is replaced by a marker saying how many bytes (and lines) were removed,
    e.g. ``[... 12,345 bytes (210 lines) truncated from the middle ...]``; the result,
    marker included, fits in ``max_bytes``. Cuts move to a line break when one is near,
    and never split a character. When ``max_bytes`` is too small to hold the marker,
    the head alone is kept.

    Returns:
        The text (unchanged when it fits) and whether it was truncated.

    Raises:
        ValueError: ``max_bytes`` is not positive.
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    if len(text) * 4 <= max_bytes:  # cannot be longer than that in UTF-8
        return text, False
    data = text.encode("utf-8", errors="surrogatepass")
    size = len(data)
    if size <= max_bytes:
        return text, False
    marker = _marker(size, data.count(b"\n"))
    budget = max_bytes - len(marker.encode())
    if budget <= 0:
        return data[:max_bytes].decode("utf-8", errors="ignore"), True
    head_end = budget - budget // 2
    tail_start = size - budget // 2
    # land on line breaks when one is close: whole lines read better than split ones
    nl = data.rfind(b"\n", max(0, head_end - _LINE_SLACK), head_end)
    if nl != -1:
        head_end = nl + 1
    nl = data.find(b"\n", tail_start, min(size, tail_start + _LINE_SLACK))
    if nl != -1:
        tail_start = nl + 1
    # never split a character: step back / forward over UTF-8 continuation bytes
    while 0 < head_end < size and data[head_end] & 0xC0 == 0x80:
        head_end -= 1
    while tail_start < size and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    removed = data[head_end:tail_start]
    marker = _marker(len(removed), removed.count(b"\n"))
    head = data[:head_end].decode("utf-8", errors="ignore")
    tail = data[tail_start:].decode("utf-8", errors="ignore")
    return head + marker + tail, True
