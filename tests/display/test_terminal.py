"""Untrusted text made safe for a terminal (``loopwright._terminal``)."""

import json
import time

from loopwright._terminal import as_typed, json_text, one_line, visible


def test_every_control_character_is_made_visible_and_text_is_kept() -> None:
    text = "a\x1b[8mb\x1b]8;;http://x\x07c\rd\x08\x00\x7f\x9b1m\u202ee\u2067f\u200e\ud800 é ✓\n\tg"
    assert visible(text) == (
        "a\\x1b[8mb\\x1b]8;;http://x\\x07c\\rd\\b\\x00\\x7f\\x9b1m\\u202ee\\u2067f\\u200e\\ud800"
        " é ✓\n\tg"
    )
    assert visible("plain text, [bold]not markup[/]\n") == "plain text, [bold]not markup[/]\n"
    every = "".join(map(chr, range(0x20))) + "".join(map(chr, range(0x7F, 0xA0)))
    assert all(c in " \n\t\\0123456789abcdefxrvb" for c in visible(every))


def test_json_text_is_valid_json_that_reads_back_and_is_safe() -> None:
    value = {"cmd": "ls\x1b[8m\r\u202e\x9b\ud800\x7f é", "n": [1, None]}
    text = json_text(value, indent=2)
    assert json.loads(text) == value
    assert visible(text) == text  # nothing left to escape
    assert '"ls\\u001b[8m\\r\\u202e\\u009b\\ud800\\u007f é"' in text


def test_what_a_terminal_shows_as_nothing_is_made_visible() -> None:
    hidden = "a\u200bb\u2060c\ufeffd\u00ade\u3164f\U000e0041g\u2028h"
    assert visible(hidden) == "a\\u200bb\\u2060c\\ufeffd\\xade\\u3164f\\U000e0041g\\u2028h"
    family = "\U0001f468\u200d\U0001f469 \u2764\ufe0f"  # prose keeps an emoji's joiners
    assert visible(family) == family
    # what a tool is given: every character seen, the joiners too; still the same JSON
    value = {"k": hidden + family}
    text = json_text(value)
    assert json.loads(text) == value
    assert "\\udb40\\udc41" in text and "\\u200d" in text and "\\ufe0f" in text
    assert all(c.isascii() or c in "\U0001f468\U0001f469\u2764" for c in text)
    assert one_line("x\u200dy\U000e0041") == "x\\u200dy\\U000e0041"


def test_one_line_escapes_line_breaks_and_cuts_the_middle() -> None:
    assert one_line("a\nb\tc\x1b[8m\u202e") == "a\\nb\\tc\\x1b[8m\\u202e"
    cut = one_line("A" + "x" * 10_000 + "\nZ", 40)
    assert cut.startswith("Axx") and cut.endswith("x\\nZ") and "\n" not in cut
    assert "[... 9,963 characters not shown ...]" in cut
    assert one_line("short", 40) == "short"


def test_it_is_linear() -> None:
    for text in ("\x1b" * 2_000_000, "abcdé" * 400_000 + "\ud800", "x" * 2_000_000):
        start = time.perf_counter()
        visible(text)
        json_text(text)
        one_line(text, 1000)
        one_line(text)
        assert time.perf_counter() - start < 5


def test_as_typed_shows_values_that_differ_as_different() -> None:
    assert as_typed("call_1:abc-2") == "call_1:abc-2"
    shown = [as_typed(v) for v in ("c1", "c1 ", "c\u200d1", "\u04411", "c1\n", "c\x7f1")]
    assert shown[1:] == ['"c1 "', '"c\\u200d1"', '"\\u04411"', '"c1\\n"', '"c\\u007f1"']
    long = as_typed("a" * 10_000 + " b", 100)
    assert long.startswith('"aaa') and long.endswith('a b"') and "characters not shown" in long
    assert len(long) < 200


def test_prints_wait_while_a_person_is_asked_and_are_bounded() -> None:
    from loopwright._terminal import MAX_HELD, asking, unless_asking

    printed: list[int] = []
    said: list[int] = []
    unless_asking(lambda: printed.append(-1))
    assert printed == [-1]  # no question: at once
    with asking():
        for i in range(MAX_HELD + 5):
            unless_asking(lambda i=i: printed.append(i), dropped=said.append)
        assert printed == [-1]  # held
    assert printed == [-1, *range(MAX_HELD)] and said == [5]  # in order; the rest counted
    unless_asking(lambda: printed.append(-2))
    assert printed[-1] == -2


def test_a_question_ended_from_outside_frees_the_prints_once() -> None:
    from loopwright._terminal import Question, asking, unless_asking

    printed: list[str] = []
    question = Question()
    with asking(question):
        unless_asking(lambda: printed.append("held"))
        question.end()  # withdrawn (the task waiting for the answer was cancelled)
        assert printed == ["held"] and not question.open
        unless_asking(lambda: printed.append("now"))
        assert printed == ["held", "now"]
    late = Question()
    late.end()  # withdrawn before it was asked: it never holds anything
    with asking(late):
        unless_asking(lambda: printed.append("free"))
    assert printed[-1] == "free"
