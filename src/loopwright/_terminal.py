"""Untrusted text made safe for a terminal.

Model output, tool results, sandboxed programs' output, dataset fields and provider
error bodies are untrusted: printed raw, an escape sequence can recolour or hide text
(``ESC[8m`` conceals what follows), move the cursor, set the window title or a
hyperlink, ``\\r`` can overwrite a line, and bidi overrides (U+202E) can show a command
in another order than it runs. A lone surrogate (``"\\ud800"``) cannot be encoded and
makes printing fail.

:func:`visible` makes every such character visible as an escape (``\\x1b``, ``\\r``,
``\\u202e``), so nothing is lost and nothing acts on the terminal: once ESC is shown as
``\\x1b``, the rest of its sequence is plain text. Line feeds and tabs are kept.
:func:`one_line` also escapes those, and bounds the text: for a value shown inside a
line of a program's own (a call's id or tool name on a prompt), which must not be able
to end that line and forge the next.
:func:`json_text` dumps JSON that is terminal-safe and still valid JSON. Neither makes
text safe from rich markup: print it as ``rich.text.Text``, or with ``markup=False``.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_text", "one_line", "visible"]

# C0 controls but \t and \n; DEL and the C1 controls (U+0080-U+009F: U+009B is a
# one-character CSI); the bidi marks, embeddings, overrides and isolates; and the
# surrogates, which only occur unpaired in a str
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b"}


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CODES = [
    *range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F,
    *range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000),
]  # fmt: skip
# str.translate: one pass in C, whatever the text holds
_SHOWN = {code: _NAMED.get(chr(code)) or _escape(code) for code in _CODES}
_JSON = {code: f"\\u{code:04x}" for code in _CODES}
_LINE = {**_SHOWN, ord("\n"): "\\n", ord("\t"): "\\t"}


def visible(text: str) -> str:
    """``text`` with every character that acts on a terminal (or cannot be encoded)
    shown as an escape: ``"a\\x1b[8mb"`` becomes ``a\\x1b[8mb`` as six plain
    characters. ``\\n`` and ``\\t`` are kept. Linear in the length of ``text``."""
    return text.translate(_SHOWN) if _UNSAFE.search(text) else text


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as :func:`visible` shows it, with ``\\n`` and ``\\t`` escaped too: one
    line, whatever it holds. Past ``limit`` characters (of ``text``), its middle is cut
    and the line says how many characters were not shown (both ends stay: two ids
    differing only at one end still look different)."""
    if limit is None or len(text) <= limit:
        return text.translate(_LINE)
    head = max(1, limit * 3 // 4)
    tail = max(1, limit - head)
    cut = len(text) - head - tail
    middle = f"[... {cut:,} characters not shown ...]"
    return text[:head].translate(_LINE) + middle + text[-tail:].translate(_LINE)


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)``, with the characters
    :func:`visible` escapes written as ``\\uXXXX`` (JSON escapes the C0 controls
    itself): valid JSON that reads back to the same value, safe to print."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return text.translate(_JSON) if _UNSAFE.search(text) else text
