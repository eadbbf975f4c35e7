"""The one helper that cuts the middle of a long text (``_terminal.cut_middle``) and the
places that use it: ``one_line``, ``as_typed``, ``runs approve``'s arguments and the
viewer's pending calls."""

from __future__ import annotations

import pytest

import loopwright as lw
from loopwright._terminal import NOT_SHOWN, as_typed, cut_middle, one_line, split_middle
from loopwright.cli._approve import shown_arguments
from loopwright.log._approvals import DeferredCall


def test_the_ends_are_kept_around_a_marker_saying_how_much_was_cut() -> None:
    text = "a" * 10 + "b" * 10
    assert cut_middle(text, 8) == "aaaaaa[... 12 characters not shown ...]bb"
    assert cut_middle("x" * 5_000, 4) == "xxx[... 4,996 characters not shown ...]x"
    assert cut_middle(text, 8, marker="<{cut} cut>") == "aaaaaa<12 cut>bb"
    assert cut_middle(text, 20) == text and cut_middle("", 0) == ""  # nothing to cut
    assert NOT_SHOWN.format(cut=1234) == "[... 1,234 characters not shown ...]"


@pytest.mark.parametrize("length", [0, 1, 2, 3, 7, 8, 9, 40, 41, 1_000])
@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 10, 39, 40])
def test_exact_bounds(length: int, limit: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    head, cut, tail = split_middle(text, limit)
    if length <= limit:
        assert (head, cut, tail) == (text, 0, "")
        return
    assert len(head) + len(tail) == limit  # exactly the limit: no character whole is lost
    assert len(head) == limit * 3 // 4
    assert cut == length - limit
    assert text.startswith(head) and text.endswith(tail)
    assert head + text[len(head) : length - len(tail)] + tail == text


def test_tiny_limits() -> None:
    assert cut_middle("abc", 0) == "[... 3 characters not shown ...]"
    assert cut_middle("abc", -5) == "[... 3 characters not shown ...]"
    assert cut_middle("abc", 1) == "[... 2 characters not shown ...]c"
    assert cut_middle("abc", 2) == "a[... 1 characters not shown ...]c"
    # one_line and as_typed keep both ends whatever the limit (ids differing at one end)
    assert one_line("abc", 1) == "a[... 1 characters not shown ...]c"
    assert as_typed("abc", 0) == '"a[... 1 characters not shown ...]c"'
    # nothing cut for nothing saved (a two-character id with limit 1 stays whole)
    assert one_line("ab", 1) == "ab"


@pytest.mark.parametrize(
    "whole",
    [
        "\ud83d\ude00",  # a surrogate pair (as some decoders leave an astral character)
        "e\u0301",  # e and a combining acute accent
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # a family: joined by ZWJs
        "\u2764\ufe0f",  # a heart and its variation selector
        "\U0001f44d\U0001f3fd",  # a thumb and its skin tone
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # a flag
    ],
)
def test_a_cut_never_splits_a_character(whole: str) -> None:
    for at in range(len(whole) + 12):
        for limit in (8, 9, 10, 11, 12, 13, 16):
            text = "a" * at + whole + "b" * 12 + whole + "c" * at
            head, cut, tail = split_middle(text, limit)
            assert len(head) + len(tail) <= limit
            assert cut == len(text) - len(head) - len(tail)
            assert text.startswith(head) and text.endswith(tail)
            middle = text[len(head) : len(text) - len(tail)]
            for part in (head, middle, tail):  # each holds whole characters only
                assert not set(part.replace(whole, "")) & set(whole), (text, limit, part)


def test_wide_characters_are_kept_whole_and_counted_as_characters() -> None:
    text = "界" * 100
    head, cut, tail = split_middle(text, 10)
    assert head == "界" * 7 and tail == "界" * 3 and cut == 90


def test_a_text_of_only_combining_marks_is_still_cut_within_bounds() -> None:
    text = "a" + "\u0301" * 100_000
    head, cut, tail = split_middle(text, 100)
    assert len(head) + len(tail) <= 100 and cut == len(text) - len(head) - len(tail)


def test_one_line_and_as_typed_never_show_half_a_surrogate_pair() -> None:
    # a cut in a pair showed its high half at the end of the head: "\\ud83d[... "
    pair = "\ud83d\ude00"
    for pad in range(8):
        text = "a" * pad + pair * 40
        for shown in (one_line(text, 20), as_typed(text, 20)):
            assert "\\ud83d[..." not in shown and "...]\\ude00" not in shown, shown
            assert "characters not shown" in shown


def test_one_line_keeps_a_combining_mark_with_its_letter() -> None:
    text = "caf" + "e\u0301" * 30
    shown = one_line(text, 10)
    assert "...]\u0301" not in shown and not shown.endswith("[...")


def deferred(arguments: dict[str, object]) -> DeferredCall:
    call = lw.ToolCall(id="c1", function="bash", arguments=arguments)
    return DeferredCall(call=call, arguments_hash="0" * 64, state="pending", created=0.0)


def test_runs_approve_cuts_arguments_to_exactly_the_limit_with_its_marker() -> None:
    call = deferred({"cmd": "x" * 10_000})
    whole = shown_arguments(call, 10**9)
    # a limit that is no multiple of 4 is kept exactly too (it kept 1 to 3 fewer)
    for limit in (4_000, 10, 11, 13, 4_001):
        shown = shown_arguments(call, limit)
        head, rest = shown.split("\n[... ", 1)
        count, tail = rest.split(" characters not shown: --whole CALL_ID shows them all ...]\n")
        assert len(head) + len(tail) == limit and int(count) == len(whole) - limit
        assert whole.startswith(head) and whole.endswith(tail)
    assert shown_arguments(deferred({"cmd": "short"})) == '{\n  "cmd": "short"\n}'
