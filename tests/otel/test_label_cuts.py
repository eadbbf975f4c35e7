"""Where :func:`label` and :func:`bounded` cut: never through a secret (however many
redacted before it shrink the text), an escape it writes, or a character and the mark
that goes with it."""

from __future__ import annotations

import pytest

from loopwright._terminal import one_line
from loopwright.model._redact import learn_secrets
from loopwright.otel._attributes import MAX_LABEL, bounded, label

# a token of 1,001 characters (a JWT, a service account's key are that long or more)
LONG_SECRET = "Zq" + "v8Rk" * 250 + "W"


def test_no_piece_of_a_long_secret_survives_a_cut_after_others_were_redacted() -> None:
    """A text holding a long secret several times: those redacted within the window
    shrink it, so the window's end (through a secret, unredacted) moved into the part
    kept."""
    learn_secrets([LONG_SECRET])
    for times in (2, 5, 9):
        text = "tool-" + LONG_SECRET * times
        for shown in (label(text), bounded(text, MAX_LABEL), bounded(text, 1000)):
            assert "[redacted]" in shown
            assert "v8Rkv8Rk" not in shown, (times, shown[:300])


@pytest.mark.parametrize(
    "tail", ["\x1b[31m", "\u202e", "\r\n", "\u200d\u200d", "e\u0301\u0301", "\U0001f44d\U0001f3fd"]
)
def test_a_cut_label_keeps_whole_escapes_and_characters(tail: str) -> None:
    """Cut just before, in or after what an escape or a combining mark makes long: what
    is kept is the label of a prefix of the value, cut between two whole characters."""
    for pad in range(MAX_LABEL - 12, MAX_LABEL + 2):
        value = "a" * pad + tail + "b" * 50
        shown = label(value)
        kept = shown.rpartition("...[")[0]
        assert kept, shown
        assert len(kept) <= MAX_LABEL
        prefixes = [one_line(value[:k]) for k in range(len(value) + 1)]
        assert kept in prefixes, (pad, tail, kept[-12:])
        k = prefixes.index(kept)
        assert value[k] not in "\u0301\U0001f3fd", (pad, tail, kept[-12:])
