"""The forms a secret takes in text, and finding all of them at once (``_redact.py`` uses it).

A tool that prints ``base64(os.environ["OPENAI_API_KEY"])``, a server that echoes the
``Authorization: Basic base64(user:key)`` header it was sent, a URL that carries the key
percent-encoded: each holds the secret in a form other than its own. Each secret is
looked for in these forms (:func:`literal_forms`):

- as it is;
- in base64, standard and URL-safe, at each of the three offsets it can have inside a
  longer encoded blob (3 bytes make 4 characters, so the secret's characters depend on
  its offset mod 3): only the characters that its bytes alone make, and the one on each
  side that mixes some of its bits with a neighbour's is redacted with them;
- in hexadecimal, and percent-encoded every byte, and ``\\uXXXX``-escaped every
  character (also as JSON writes that: ``\\\\uXXXX``): with hex digits of either
  case, mixed too;
- percent-encoded as a URL encoder does (what is not a letter, digit or ``-._~``),
  with upper or lower case hex digits;

and, in JSON text, each of those as JSON writes it inside a string (``\\u0073`` becomes
``\\\\u0073``).

**The cost per row does not grow with the number of secrets.** Testing each form with
``in`` would cost a pass over the row for every form of every secret. Instead, a form
of ``m >= s + 7`` bytes contains, wherever it occurs, one of the text's 8-byte blocks at
the offsets ``0, s, 2s...``: the row's UTF-8 bytes are read as 64-bit integers every
``s`` bytes (an ``array``, filled in C), and one set lookup each tells whether any
form's 8 bytes at any of its first ``s`` offsets (and, for hex digits, in any case) is
there. Each form takes the largest stride ``s`` (32, 16 or 8) its length allows, and
the pass is made once at the smallest stride in use (its blocks include those of the
larger ones): ``len / s`` integers whatever the number of forms (``len / 32`` for
secrets of 39 characters or more, as API keys are); only a form whose 8 bytes were seen
is then looked for (and replaced). Forms shorter than 15 bytes (the secrets of 8 to 14
characters, their base64) are looked for one by one with ``in``: their cost does grow
with their number. The run store's writer passes all the rows of a batch through the
gate at once (``redact_known_rows``).

Every occurrence of every form is found in the text as it is, the spans are merged and
replaced in one pass, so two secrets that overlap, or a secret inside another, go whole.
A span never ends inside a backslash escape (``\\n``, ``\\u00e9``: the base64 character
taken before a form, a form found from an escape's middle): it takes the whole escape,
so a JSON row stays JSON. A secret holding lone surrogates (an environment variable
that is not UTF-8) is encoded as the bytes it stands for too.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["JSON", "PLAIN", "Forms", "literal_forms", "replace"]

JSON = 1
"""A form as it appears inside a JSON string."""
PLAIN = 2
"""A form as it appears in plain text."""

_BLOCK = 8  # bytes per block of the gate (a 64-bit integer)
_STRIDES = (32, 16, 8)  # a form of m bytes goes to the largest stride s with m >= s + 7
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_HEX_LETTERS = frozenset(b"abcdef")


@dataclass(frozen=True)
class _Form:
    text: str  # lower case when ``hex_case``
    mask: int  # JSON | PLAIN
    hex_case: bool  # its a-f may be of either case
    left: bool  # redact one more base64 character before it (it holds some of its bits)
    right: bool  # ... and after it


def _b64_cores(raw: bytes) -> list[tuple[str, bool, bool]]:
    """``raw``'s base64 characters at each of the three offsets it may have in a longer
    blob (those its bytes alone make), standard and URL-safe, with whether a character
    before and after them holds some of its bits."""
    out = []
    for r in range(3):
        enc = base64.b64encode(bytes(r) + raw).decode("ascii").rstrip("=")
        start = -(-8 * r // 6)  # the first character with no bit of the r bytes before
        end = 8 * (r + len(raw)) // 6  # past the last one made of the secret's bits alone
        core = enc[start:end]
        left, right = (8 * r) % 6 != 0, (8 * (r + len(raw))) % 6 != 0
        out.append((core, left, right))
        url = core.replace("+", "-").replace("/", "_")
        if url != core:
            out.append((url, left, right))
    return out


def _raw_bytes(secret: str) -> list[bytes]:
    """The bytes a secret stands for: UTF-8, and for one with lone surrogates (an
    environment variable that is not UTF-8, decoded with ``surrogateescape``) the bytes
    it held as well (the last of the list: those a URL or a tool encodes)."""
    raws = [secret.encode("utf-8", "surrogatepass")]
    try:
        held = secret.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # (a surrogate that stands for no byte)
        return raws
    return raws if held == raws[0] else [*raws, held]


def _escape_all(value: str) -> str:
    """Every character as ``\\uXXXX`` (UTF-16 units: a pair for one past U+FFFF)."""
    units = value.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def literal_forms(secret: str) -> list[tuple[str, bool, bool, bool]]:
    """The forms of ``secret`` in plain text: ``(text, hex_case, left, right)`` (see the
    module documentation)."""
    forms = [(secret, False, False, False)]
    for raw in _raw_bytes(secret):
        forms += [(core, False, left, right) for core, left, right in _b64_cores(raw)]
        forms.append((raw.hex(), True, False, False))
        forms.append(("".join(f"%{b:02x}" for b in raw), True, False, False))
    escaped = _escape_all(secret)  # (and as JSON text holds it: a tool printing JSON)
    forms += [(escaped, True, False, False), (escaped.replace("\\", "\\\\"), True, False, False)]
    url = quote(raw, safe="")  # (bytes: a lone surrogate is no str quote encodes)
    if url != secret:
        lower = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), url)
        forms += [(url, False, False, False), (lower, False, False, False)]
    return forms


def _json_text(form: str) -> set[str]:
    return {json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]}


def _grams(data: bytes, stride: int, hex_case: bool) -> set[int]:
    """The 8-byte blocks (as the gate reads them) of ``data`` at offsets ``0..stride-1``;
    with ``hex_case``, in every case of its hex letters (a letter's upper case is 32
    less: each variant is the block's value less some of its letters' 32s)."""
    out = set()
    for offset in range(stride):
        block = data[offset : offset + _BLOCK]
        values = [int.from_bytes(block, sys.byteorder)]
        if hex_case:
            for i, b in enumerate(block):
                if b in _HEX_LETTERS:
                    shift = 8 * (i if sys.byteorder == "little" else _BLOCK - 1 - i)
                    values += [v - (32 << shift) for v in values]
        out.update(values)
    return out


def _stride(size: int) -> int:
    return next((s for s in _STRIDES if size >= s + _BLOCK - 1), 0)


class Forms:
    """The forms of a set of secrets, and a gate that finds which occur in a text at a
    cost that does not grow with their number. Immutable: :meth:`adding` makes a new
    one, so readers use one without a lock."""

    def __init__(self) -> None:
        self.forms: tuple[_Form, ...] = ()
        self.short: tuple[int, ...] = ()  # forms looked for one by one
        self.gate: dict[int, tuple[int, ...]] = {}  # an 8-byte block: the forms holding it
        self.blocks: frozenset[int] = frozenset()  # the gate's keys
        self.stride = 0  # the smallest stride of a form (0: none)

    def __bool__(self) -> bool:
        return bool(self.forms)

    def adding(self, secrets: Iterable[str]) -> Forms:
        """A new :class:`Forms` with the forms of ``secrets`` too (those known keep their
        index, so their gates are copied as they are)."""
        index = {(f.text, f.hex_case): i for i, f in enumerate(self.forms)}
        forms = list(self.forms)
        added: list[int] = []
        for secret in secrets:
            for text, hex_case, left, right in literal_forms(secret):
                variants = [(text, PLAIN), *((t, JSON) for t in _json_text(text))]
                for t, mask in variants:
                    i = index.get((t, hex_case))
                    if i is None:
                        i = index[t, hex_case] = len(forms)
                        forms.append(_Form(t, mask, hex_case, left, right))
                        added.append(i)
                    else:
                        f = forms[i]
                        forms[i] = _Form(
                            t, f.mask | mask, hex_case, f.left or left, f.right or right
                        )
        new = Forms()
        new.forms = tuple(forms)
        short = list(self.short)
        gate = dict(self.gate)
        strides = [self.stride] if self.stride else []
        for i in added:
            form = forms[i]
            data = form.text.encode("utf-8", "surrogatepass")
            stride = _stride(len(data))
            if not stride:
                short.append(i)
                continue
            strides.append(stride)
            for gram in _grams(data, stride, form.hex_case):
                gate[gram] = (*gate.get(gram, ()), i)
        new.short, new.gate, new.blocks = tuple(short), gate, frozenset(gate)
        # (one pass over the blocks at the smallest stride serves the forms of a larger
        # one too: its blocks are among them, the strides being powers of 2)
        new.stride = min(strides, default=0)
        return new

    def candidates(self, text: str, mask: int) -> set[int]:
        """The forms (of ``mask``) that may occur in ``text``: a superset of those that do."""
        forms = self.forms
        found = set()
        for i in self.short:
            if forms[i].mask & mask and forms[i].text in text:
                found.add(i)
        if not self.stride:
            return found
        data = text.encode("utf-8", "surrogatepass")
        # (a form lies within the text: the 8 bytes it must hold are never past its
        # end, so a last partial block is left out; an array iterates faster than a
        # memoryview)
        blocks = array("Q")
        blocks.frombytes(memoryview(data)[: len(data) - len(data) % _BLOCK])
        if self.stride > _BLOCK:
            blocks = blocks[:: self.stride // _BLOCK]
        if self.blocks.isdisjoint(blocks):
            return found
        for block in self.blocks.intersection(blocks):
            found.update(i for i in self.gate[block] if forms[i].mask & mask)
        return found

    def spans(self, text: str, candidates: Iterable[int]) -> list[tuple[int, int]]:
        """Where the forms ``candidates`` occur in ``text`` (each occurrence, unmerged)."""
        spans: list[tuple[int, int]] = []
        for i in candidates:
            form = self.forms[i]
            if form.hex_case:
                starts: Iterable[int] = (m.start() for m in _pattern(form.text).finditer(text))
            else:
                starts = _all_starts(text, form.text)
            for start in starts:
                a, b = start, start + len(form.text)
                if form.left and a > 0 and ord(text[a - 1]) in _B64:
                    a -= 1
                if form.right and b < len(text) and ord(text[b]) in _B64:
                    b += 1
                # (never half an escape: the character taken before a base64 form, or
                # a form found from the middle of one, may end ``\n`` or ``\u00e9``,
                # and a JSON row cut there no longer loads)
                if (e := _escape_at(text, a)) is not None:
                    a = e[0]
                if (e := _escape_at(text, b)) is not None:
                    b = e[1]
                spans.append((a, b))
        return spans


def replace(text: str, found: Iterable[tuple[Forms, int]], replacement: str) -> str:
    """``text`` with every occurrence of the forms of each ``(forms, mask)`` of ``found``
    replaced by ``replacement``: the spans of all are merged first, so overlapping
    secrets go whole; ``text`` itself (not a copy) when none occurs."""
    hits = [(forms, c) for forms, mask in found if forms and (c := forms.candidates(text, mask))]
    if not hits:  # (the common case: no more than the gate's pass)
        return text
    spans = sorted(span for forms, c in hits for span in forms.spans(text, c))
    if not spans:
        return text
    parts: list[str] = []
    at = 0
    for a, b in spans:
        if parts and a <= at:  # within or next to the span before: one span
            at = max(at, b)
            continue
        parts += (text[at:a], replacement)
        at = b
    parts.append(text[at:])
    return "".join(parts)


_HEX = frozenset("0123456789abcdefABCDEF")


def _escape_at(text: str, i: int) -> tuple[int, int] | None:
    """The span of the backslash escape (``\\x``, ``\\uXXXX``) that ``text[i]`` lies
    inside of, not as its first character; None when it lies in none."""
    for j in range(i - 1, max(i - 6, -1), -1):
        if text[j] != "\\":
            continue
        run = j
        while run > 0 and text[run - 1] == "\\":
            run -= 1
        if (j - run) % 2:  # (an escaped backslash: no escape starts at j)
            return None
        end = j + 2
        if text[j + 1 : j + 2] == "u" and all(c in _HEX for c in text[j + 2 : j + 6]):
            end = j + 6
        return (j, end) if i < end else None
    return None


@functools.lru_cache(maxsize=256)
def _pattern(form: str) -> re.Pattern[str]:
    """A form whose hex digits may be of any case (compiled when first looked for: only
    where the gate saw it); a lookahead, so overlapping occurrences are found too."""
    hexed = (f"[{c}{c.upper()}]" if c in "abcdef" else re.escape(c) for c in form)
    return re.compile(f"(?=({''.join(hexed)}))")


def _all_starts(text: str, needle: str) -> Iterable[int]:
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)
