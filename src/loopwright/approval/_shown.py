"""What a person approving calls is shown, and what binds a decision to it.

Every surface that shows calls to approve (the terminal prompt, ``loopwright runs
approve``, the viewer) shows a call the same way: its tool name and id as typed
(:func:`~loopwright._terminal.as_typed`: a lookalike letter, a trailing space, a joiner
shows), its arguments as terminal-safe JSON (:func:`arguments_text`). A listing cuts
arguments longer than :data:`MAX_SHOWN` characters in the middle; a call so cut was
not shown whole (:func:`shown_whole`), so no bulk approval may approve it: the person
reads it whole first, then approves it by its arguments' hash.

A bulk approval names what it approves by :func:`listing_digest`, the hash of the
calls a listing showed whole (their ids and arguments' hashes, in order): if the calls
waiting are not those any more (a call added, its arguments changed), the digest
differs and the approval is refused.

:func:`notes` says what the JSON shows but a person may miss: a stretch of blank
characters long enough to push what follows it off the screen (or out of a box), and
where it is; a word that mixes Latin letters with a lookalike of another script.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

from .._terminal import as_typed, json_text
from ..model import ToolCall

__all__ = [
    "BLANK_RUN",
    "MAX_NAME",
    "MAX_SHOWN",
    "MAX_TOOLS",
    "arguments_text",
    "listing_digest",
    "notes",
    "shown_whole",
    "tools_summary",
]

MAX_SHOWN = 4_000
"""The most characters of a call's arguments (as :func:`arguments_text`) a listing shows;
the middle of longer ones is cut."""

MAX_NAME = 200
"""The most characters of a call's id or tool name shown (the middle of longer ones is
cut, as :func:`~loopwright._terminal.as_typed` does)."""

BLANK_RUN = 64
"""A run of at least this many blank characters in the arguments is noted: it can push
what follows it off a screen that does not wrap, or out of the box it is shown in."""

# blank: what a terminal or a page shows as empty space (the JSON escapes line breaks in
# a string; between tokens, indent=2 writes no such run), the braille blank (U+2800) too,
# which is no space but shows as one; a stretch of them: runs of at least 4 with at most
# 2 other characters between (runs each short of BLANK_RUN, a dot apart, push as far)
_BLANK = "[ \\t\u00a0\u1680\u2000-\u200a\u202f\u205f\u2800\u3000]"
_STRETCH = re.compile(rf"(?:{_BLANK}{{4,}}[^\n{_BLANK[1:-1]}]{{1,2}})*{_BLANK}{{4,}}")
_ONE_BLANK = re.compile(_BLANK)


def arguments_text(call: ToolCall) -> str:
    """The call's arguments as every surface shows them: JSON (``indent=2``), every
    character that acts on a terminal or shows as nothing escaped (valid JSON that
    reads back to the arguments)."""
    return json_text(call.arguments, indent=2, default=str)


def shown_whole(call: ToolCall, limit: int = MAX_SHOWN) -> bool:
    """Whether a listing shows the call whole: its arguments, tool name and id uncut."""
    return (
        len(call.function) <= MAX_NAME
        and len(call.id) <= MAX_NAME
        and len(arguments_text(call)) <= limit
    )


def listing_digest(calls: Iterable[tuple[str, str]]) -> str:
    """The SHA-256 of calls as ``(call id, arguments hash)`` pairs, in the order shown:
    what a bulk approval names to approve those calls and no others."""
    text = json.dumps([[call_id, digest] for call_id, digest in calls], ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


MAX_TOOLS = 20
"""The most tools :func:`tools_summary` names (the rest are counted)."""


def tools_summary(names: Iterable[str] | Mapping[str, int]) -> str:
    """``1 bash, 40 read_file``: how many calls of each tool (its name as typed),
    the rarest first (a call that hides among many others is named first); ``names``:
    each call's tool, or the count of calls by tool."""
    counts = Counter(names) if not isinstance(names, Mapping) else names
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]))
    said = ", ".join(f"{n:,} {as_typed(name, 80)}" for name, n in ranked[:MAX_TOOLS])
    if len(ranked) > MAX_TOOLS:
        rest = sum(n for _, n in ranked[MAX_TOOLS:])
        said += f", and {rest:,} of {len(ranked) - MAX_TOOLS:,} other tools"
    return said


def notes(text: str) -> list[str]:
    """What a person may miss in ``text`` (a call's arguments as shown): each stretch of
    :data:`BLANK_RUN` or more blank characters (runs of blanks at most two other
    characters apart, a braille blank counted), with where it is and what follows it;
    each word that mixes Latin letters with a letter of another script. (At most three
    of each are said, and how many more there are.)"""
    runs = [
        (found, blanks)
        for found in _STRETCH.finditer(text)
        if (blanks := len(_ONE_BLANK.findall(found.group()))) >= BLANK_RUN
    ]
    out = []
    for found, blanks in runs[:3]:
        after = text[found.end() : found.end() + 40].split("\n")[0]
        out.append(
            f"{blanks:,} blank characters at character "
            f"{found.start():,}, then: {json.dumps(after, ensure_ascii=True)}"
        )
    if len(runs) > 3:
        out.append(f"and {len(runs) - 3:,} more such runs")
    return out + _mixed(text)


_WORD = re.compile(r"[^\W\d_]{2,}")  # (a run of letters)
# the scripts with letters that pass for Latin ones (a word of Latin and Japanese, as
# "Python\u3067", is common and deceives no one)
_LOOKALIKES = ("CYRILLIC", "GREEK", "COPTIC", "ARMENIAN", "CHEROKEE", "FULLWIDTH", "MATHEMATICAL")


def _mixed(text: str) -> list[str]:
    """A note for each word that mixes ASCII letters with a letter of another script
    (``ex\u0430mple``: printed, it is ``example``; at most three are said)."""
    out: list[str] = []
    more = 0
    for found in _WORD.finditer(text):
        word = found.group()
        if word.isascii() or not any(c.isascii() for c in word):
            continue
        odd = next((c for c in word if unicodedata.name(c, "?").startswith(_LOOKALIKES)), None)
        if odd is None:
            continue
        if len(out) == 3:
            more += 1
            continue
        out.append(
            f"the word {json.dumps(word[:60], ensure_ascii=True)} at character {found.start():,} "
            f"mixes Latin letters with {unicodedata.name(odd, 'an unnamed letter')} "
            f"(U+{ord(odd):04X}): it may look like another word"
        )
    if more:
        out.append(f"and {more:,} more such words")
    return out
