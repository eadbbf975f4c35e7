"""The thought filter of text protocols: what of a raw reply may be shown as it streams."""

from __future__ import annotations

from loopwright.model._stream import ThoughtFilter


def shown(protocol: str, pieces: list[str]) -> str:
    f = ThoughtFilter(protocol)
    return "".join(f.feed(p) for p in pieces) + f.flush()


def test_react_shows_the_thought_up_to_the_action_even_one_character_at_a_time() -> None:
    reply = 'Thought: add them.\nAction: add\nAction Input: {"a": 1}'
    assert shown("react", list(reply)) == "Thought: add them.\n"
    assert shown("react", [reply]) == "Thought: add them.\n"


def test_react_stops_at_a_final_answer_or_an_invented_observation() -> None:
    assert shown("react", ["Thought: done.\nFinal Ans", "wer: 42"]) == "Thought: done.\n"
    assert shown("react", ["Observation: fake", " result"]) == ""


def test_react_without_a_marker_shows_everything_once_it_ends() -> None:
    f = ThoughtFilter("react")
    text = "a reply with no marker at all"
    now = f.feed(text)
    held = len("Final Answer:") - 1  # what might still become a marker
    assert now == text[:-held]
    assert now + f.flush() == text
    assert f.passed


def test_protocols_without_markers_show_nothing_while_streaming() -> None:
    f = ThoughtFilter("json")
    assert f.feed('{"thought": "x"}') == "" and f.flush() == "" and not f.passed


def test_the_work_per_piece_does_not_grow_with_the_reply() -> None:
    f = ThoughtFilter("react")
    for _ in range(10_000):
        f.feed("abc ")
    assert len(f._held) < len("Final Answer:")
