"""Untrusted text made safe for a terminal.

Model output, tool results, sandboxed programs' output, dataset fields and provider
error bodies are untrusted: printed raw, an escape sequence can recolour or hide text
(``ESC[8m`` conceals what follows), move the cursor, set the window title or a
hyperlink, ``\\r`` can overwrite a line, and bidi overrides (U+202E) can show a command
in another order than it runs. A lone surrogate (``"\\ud800"``) cannot be encoded and
makes printing fail. And a terminal shows some characters as nothing at all (a
zero-width space, a word joiner, the tag characters U+E0000-E007F, which can spell a
whole instruction to a model, unseen), so a value can hold what no one sees.

:func:`visible` makes every such character visible as an escape (``\\x1b``, ``\\r``,
``\\u202e``, ``\\u200b``), so nothing is lost and nothing acts on the terminal or hides:
once ESC is shown as ``\\x1b``, the rest of its sequence is plain text. Line feeds and
tabs are kept, and the joiners and variation selectors an emoji needs.
:func:`one_line` also escapes those, and bounds the text: for a value shown inside a
line of a program's own (a call's id or tool name on a prompt), which must not be able
to end that line and forge the next.
:func:`as_typed` shows a value a person types back (a call's id) so that two that
differ look different: as it is when plain ASCII, else as a JSON string.
:func:`asking` marks the time a person is asked a question on the terminal (the human
approver's); the displays print through :func:`unless_asking`, which holds their lines
until the question is answered: a line printed under the question (a parallel call's
result, a subagent's streamed text) could pass for the question's own lines, a fake
call to approve below the real one.
:data:`GUTTER` starts each line of untrusted text a display shows on lines of its own
(all but the first, for a text shown after a label: :func:`hanging`), so that none can
pass for the display's own lines. :func:`cut_middle` (and :func:`split_middle`) keeps
the two ends of a long text, the marker between them saying how much was cut, every
character whole.
:func:`json_text` dumps JSON that is terminal-safe and still valid JSON, every character
of it seen (the joiners escaped too: it shows what a tool is given). None makes
text safe from rich markup: print it as ``rich.text.Text``, or with ``markup=False``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "GUTTER",
    "NOT_SHOWN",
    "Question",
    "as_typed",
    "asking",
    "cut_middle",
    "fold",
    "hanging",
    "json_text",
    "one_line",
    "questions_asked",
    "shell_word",
    "split_middle",
    "terminal_width",
    "unless_asking",
    "visible",
    "whole_before",
    "wrapped",
]

# C0 controls but \t and \n; DEL and the C1 controls (U+0080-U+009F: U+009B is a
# one-character CSI); the bidi marks, embeddings, overrides and isolates; and the
# surrogates, which only occur unpaired in a str
_ACTING = [
    *range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F,
    *range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000),
]  # fmt: skip
# characters a terminal shows as nothing (Unicode's default-ignorable code points, the
# line and paragraph separators): hidden text (tag characters can spell a whole
# instruction to a model, unseen), an id that looks like another
_HIDDEN = [
    0x00AD, 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x200B,
    0x2028, 0x2029, *range(0x2060, 0x2066), *range(0x206A, 0x2070), 0x3164, 0xFEFF,
    0xFFA0, *range(0xFFF0, 0xFFF9), *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B),
    *range(0xE0000, 0xE1000),
]  # fmt: skip
# the joiners and variation selectors: invisible too, but an emoji or a word of some
# scripts needs them, so prose keeps them; an argument, an id or a name does not
_JOINERS = [0x200C, 0x200D, *range(0xFE00, 0xFE10)]
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b"}


def _escape(code: int) -> str:
    if code < 0x100:
        return _NAMED.get(chr(code)) or f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # (JSON writes it as a surrogate pair)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def _class(codes: list[int]) -> re.Pattern[str]:
    """A regex matching any of ``codes`` (as ranges of consecutive code points)."""
    parts, codes = [], sorted(codes)
    first = last = codes[0]
    for code in [*codes[1:], -1]:
        if code == last + 1:
            last = code
            continue
        parts.append(re.escape(chr(first)) + (f"-{re.escape(chr(last))}" if last > first else ""))
        first = last = code
    return re.compile(f"[{''.join(parts)}]")


# str.translate: one pass in C, whatever the text holds
_PROSE = [*_ACTING, *_HIDDEN]
_EXACT = [*_PROSE, *_JOINERS]
_UNSAFE = _class(_PROSE)
_SHOWN = {code: _escape(code) for code in _PROSE}
_JSON = {code: _json_escape(code) for code in _EXACT}
_EXACT_UNSAFE = _class(_EXACT)
_LINE = {**{code: _escape(code) for code in _EXACT}, ord("\n"): "\\n", ord("\t"): "\\t"}


def visible(text: str) -> str:
    """``text`` with every character that acts on a terminal (or cannot be encoded),
    or that it shows as nothing, shown as an escape: ``"a\\x1b[8mb"`` becomes
    ``a\\x1b[8mb`` as six plain characters, a zero-width space ``\\u200b``, a tag
    character ``\\U000e0041``. ``\\n`` and ``\\t`` are kept, and the joiners and
    variation selectors prose needs (an emoji's). Linear in the length of ``text``."""
    return text.translate(_SHOWN) if _UNSAFE.search(text) else text


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as :func:`visible` shows it, with ``\\n``, ``\\t``, the joiners and the
    variation selectors escaped too: one line, every character seen, whatever it
    holds. Past ``limit`` characters (of ``text``), its middle is cut and the line says
    how many characters were not shown (both ends stay: two ids differing only at one
    end still look different)."""
    if limit is None or len(text) <= max(2, limit):  # (2: both ends, whatever the limit)
        plain = "\n" not in text and "\t" not in text and not _EXACT_UNSAFE.search(text)
        return text if plain else text.translate(_LINE)
    head, cut, tail = split_middle(text, max(2, limit))
    return head.translate(_LINE) + NOT_SHOWN.format(cut=cut) + tail.translate(_LINE)


_PLAIN = re.compile(r"[A-Za-z0-9_.,:;@/+=~%#-]+")


def as_typed(text: str, limit: int = 200) -> str:
    """``text`` as a person reads it to type it back: as it is when it is plain ASCII
    (letters, digits, ``_.,:;@/+=~%#-``), else as a JSON string with every other
    character escaped (``"call 1"``, ``"d\\u0435ploy"``: a space, a lookalike letter, a
    joiner all show). Past ``limit`` characters its middle is cut, saying so."""
    if len(text) <= max(2, limit):  # (2: both ends, whatever the limit)
        return text if _PLAIN.fullmatch(text) else json.dumps(text)
    head, cut, tail = split_middle(text, max(2, limit))
    return json.dumps(head)[:-1] + NOT_SHOWN.format(cut=cut) + json.dumps(tail)[1:]


_SHELL_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")  # (no shell gives these a meaning)


def shell_word(text: str, limit: int = 200) -> str:
    """``text`` as one word of a command a person pastes into a shell (bash, zsh), the
    program then given exactly ``text``: as it is when no shell gives its characters a
    meaning; in single quotes when it is printable ASCII (``'x; rm -rf ~'``,
    ``'$(curl x)'``: nothing expanded, nothing run); else in ANSI-C quotes with every
    other character escaped (``$'d\\u0435ploy'``: a lookalike letter, a control, a bidi
    override show, and the shell makes them the characters again; a UTF-8 locale's).
    Past ``limit`` characters its middle is cut, saying so (no longer a working word:
    a command that names nothing, not one that names something else)."""
    if len(text) > max(2, limit):
        head, cut, tail = split_middle(text, max(2, limit))
        return shell_word(head, limit) + NOT_SHOWN.format(cut=cut) + shell_word(tail, limit)
    if _SHELL_PLAIN.fullmatch(text):
        return text
    if all(" " <= c <= "~" for c in text):
        return "'" + text.replace("'", "'\\''") + "'"
    return "$'" + "".join(_ansi_c(c) for c in text) + "'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if " " <= char <= "~":
        return char
    code = ord(char)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


NOT_SHOWN = "[... {cut:,} characters not shown ...]"
"""What stands for the middle :func:`cut_middle` cuts (``{cut}``: how many characters)."""

_MAX_SHIFT = 32  # how far a cut moves to keep a character whole, at the most


def _joined(char: str) -> bool:
    """Whether ``char`` belongs with the character before it: the second half of a
    surrogate pair, a combining mark, a joiner, a variation selector, a skin tone or a
    tag character (an emoji flag's)."""
    code = ord(char)
    return (
        0xDC00 <= code <= 0xDFFF
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
        or 0xE0100 <= code <= 0xE01EF
        or unicodedata.category(char) in ("Mn", "Me", "Mc")
    )


def _whole(text: str, at: int) -> bool:
    """Whether a cut before ``text[at]`` leaves the characters on both sides whole."""
    if at <= 0 or at >= len(text):
        return True
    before = ord(text[at - 1])
    return not (_joined(text[at]) or 0xD800 <= before <= 0xDBFF or before == 0x200D)


def whole_before(text: str, at: int) -> int:
    """The place of a cut at ``at`` or a little before it (moving at most a few
    characters) that leaves the characters on both sides whole, as :func:`split_middle`
    cuts: no surrogate pair split, no combining mark, joiner or variation selector apart
    from its character."""
    for _ in range(_MAX_SHIFT):
        if _whole(text, at):
            break
        at -= 1
    return at


def split_middle(text: str, limit: int) -> tuple[str, int, str]:
    """``text``'s two ends and how many characters between them are cut, so that
    ``head + tail`` is ``text`` when it has at most ``limit`` characters (``cut`` 0, the
    tail empty), else at most ``limit`` of its characters: about the first three
    quarters and the last quarter of them. A cut never splits a surrogate pair, nor
    leaves a combining mark, a joiner or a variation selector apart from the character
    it goes with (it moves into the middle: fewer characters are kept, never more).
    Linear in ``limit``, whatever the length of ``text``."""
    if len(text) <= limit:
        return text, 0, ""
    limit = max(0, limit)
    end = limit * 3 // 4
    start = len(text) - (limit - end)
    for _ in range(_MAX_SHIFT):
        if _whole(text, end):
            break
        end -= 1
    for _ in range(_MAX_SHIFT):
        if _whole(text, start):
            break
        start += 1
    return text[:end], start - end, text[start:]


def cut_middle(text: str, limit: int, *, marker: str = NOT_SHOWN) -> str:
    """``text``, or past ``limit`` characters, its ends around ``marker`` (its ``{cut}``
    replaced by how many characters it stands for): at most ``limit`` characters of
    ``text`` kept, as :func:`split_middle` chooses them. The text is not made safe:
    give what it returns to :func:`visible` (or make the ends safe before)."""
    head, cut, tail = split_middle(text, limit)
    return head + marker.format(cut=cut) + tail if cut else head


def json_text(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **kwargs)``, with the characters
    :func:`visible` escapes, and the joiners and variation selectors, written as
    ``\\uXXXX`` (JSON escapes the C0 controls itself): valid JSON that reads back to the
    same value, safe to print, every character of it seen (what a tool is given)."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    return text.translate(_JSON) if _EXACT_UNSAFE.search(text) else text


GUTTER = "│ "
"""What a line of untrusted text shown on a display's own line starts with (after its
indent), a line of it after its first, or a row a long one is wrapped onto: no line a
display writes of its own starts with it, so no text from a model or a tool can begin
where the display's lines begin and pass for one (a fake tool result, approval or step)."""


def hanging(text: str, quote: str = "  " + GUTTER) -> str:
    """``text`` as :func:`visible` shows it, for a line of a program's own that it ends
    (``error: ...``): each line of it after the first begins with ``quote`` (the
    gutter), so none can pass for the program's next line."""
    return visible(text).replace("\n", "\n" + quote)


def _cells(text: str) -> int:
    """The most cells a terminal may show ``text`` in: rich's measure, or the sum of
    its characters' (a terminal that does not join an emoji sequence shows each part),
    an emoji presentation selector (U+FE0F) counting one (it makes a narrow character
    before it two cells wide, even across two deltas of a stream)."""
    from rich.cells import cell_len, get_character_cell_size

    if text.isascii():
        return len(text)
    each = sum(get_character_cell_size(char) for char in text) + text.count("\ufe0f")
    return max(cell_len(text), each)


def fold(text: str, column: int, width: int, indent: int = 0) -> tuple[list[str], int]:
    """``text`` (no line break in it) written from ``column`` of a row ``width`` cells
    wide: the pieces each row takes (the first on the current row; each next row begins
    with ``indent`` cells of the caller's) and the column it ends at. A wide character
    that would not fit goes to the next row whole, with what joins it (a variation
    selector, a combining mark...); each is measured at the most cells a terminal may
    show it in, so that the terminal never has a row to wrap."""
    size = _cells(text)
    if column + size <= width:
        return [text], column + size
    pieces, start, at = [], 0, 0
    while at < len(text):
        end = at + 1  # (what joins text[at] goes with it)
        while end < len(text) and end - at <= _MAX_SHIFT and not _whole(text, end):
            end += 1
        size = _cells(text[at:end])
        if column + size > width and column > indent:
            pieces.append(text[start:at])
            start, column = at, indent
        column += size
        at = end
    pieces.append(text[start:])
    return pieces, column


def terminal_width(stream: Any) -> int | None:
    """The width in cells of the terminal ``stream`` writes to (``None``: not one)."""
    import os

    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (OSError, ValueError, AttributeError):  # (closed, no descriptor: not a terminal)
        return None


def wrapped(text: str, width: int | None, quote: str = "  " + GUTTER) -> str:
    """``text`` (made safe: :func:`visible`) with each line longer than ``width`` cells
    cut into rows that fit, every character kept (tabs written as spaces), each row
    after a line's first beginning with ``quote``: a terminal then wraps nothing, which
    would put a row of untrusted text at the first column, where a program's own lines
    begin. ``width`` ``None`` (not a terminal): as it is."""
    if width is None:
        return text
    width = max(width, len(quote) + 1)
    out: list[str] = []
    for line in text.split("\n"):
        # (a tab is printed as up to 8 spaces: written as them, it is measured right)
        pieces, _ = fold(line.expandtabs() if "\t" in line else line, 0, width, len(quote))
        out.append(pieces[0])
        out.extend(quote + piece for piece in pieces[1:])
    return "\n".join(out)


MAX_HELD = 2_000
"""The most prints held while a person is asked (the rest are dropped, and counted)."""

_state = threading.Lock()
_asking = 0
_asked = 0  # questions put on the screen so far
_held: list[Callable[[], None]] = []
_dropped: list[Any] = [0, None]  # how many were dropped, and who says so


class Question:
    """A question asked on the terminal (:func:`asking`): open from :meth:`begin` to
    :meth:`end`. Either side may end it (the thread reading the answer, or the task
    waiting for it, when it is cancelled), once."""

    def __init__(self) -> None:
        self._state = "new"

    @property
    def open(self) -> bool:
        """Whether the question is on the screen, unanswered."""
        return self._state == "open"

    def begin(self) -> None:
        """The question is on the screen: prints through :func:`unless_asking` wait."""
        global _asking, _asked
        with _state:
            if self._state == "new":
                self._state = "open"
                _asking += 1
                _asked += 1

    def end(self) -> None:
        """The question is answered or withdrawn: the prints held are made, in order,
        once no question is open. (Ending one never begun keeps it from beginning.)"""
        global _asking
        with _state:
            was, self._state = self._state, "ended"
            if was != "open":
                return
            _asking -= 1
            if _asking:
                return
            held, (dropped, say) = list(_held), _dropped
            _held.clear()
            _dropped[:] = [0, None]
            # (a display that fails to print must not lose the person's answer)
            for show in held:
                with contextlib.suppress(Exception):
                    show()
            if dropped and say is not None:
                with contextlib.suppress(Exception):
                    say(dropped)


@contextlib.contextmanager
def asking(question: Question | None = None) -> Iterator[Question]:
    """Within: a person is being asked ``question`` on the terminal (a new one by
    default). Prints made through :func:`unless_asking` meanwhile wait, and are made, in
    order, when it ends (here, or earlier by ``question.end()``)."""
    question = question or Question()
    question.begin()
    try:
        yield question
    finally:
        question.end()


def questions_asked() -> int:
    """How many questions were put on the terminal so far: a row a program was writing
    when the count changed was ended by one (its prompt, the person's answer)."""
    return _asked


def unless_asking(
    show: Callable[[], None], *, dropped: Callable[[int], None] | None = None
) -> None:
    """Call ``show`` (it prints) now, or, while a person is asked a question
    (:func:`asking`), once the question ends. At most :data:`MAX_HELD` wait; past that
    they are dropped, and ``dropped(count)`` is called at the end to say so."""
    with _state:
        if not _asking:
            show()
        elif len(_held) < MAX_HELD:
            _held.append(show)
        else:
            _dropped[0] += 1
            _dropped[1] = dropped
