"""``truncate_output``: middle truncation that keeps head and tail, UTF-8 safe."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopwright as lw

MARKER = re.compile(
    r"\n\n\[\.\.\. ([\d,]+) bytes(?: \(([\d,]+) lines\))? truncated from the middle \.\.\.\]\n\n"
)


def test_short_text_is_unchanged() -> None:
    assert lw.truncate_output("hello", 5) == ("hello", False)
    assert lw.truncate_output("", 1) == ("", False)
    assert lw.truncate_output("é" * 10, 20) == ("é" * 10, False)  # 20 bytes exactly


def test_long_text_keeps_head_and_tail_and_says_what_was_removed() -> None:
    text = "".join(f"line {i:04d}\n" for i in range(1000))  # 10 bytes a line
    out, truncated = lw.truncate_output(text, 500)
    assert truncated
    assert len(out.encode()) <= 500
    head, tail = MARKER.split(out)[0], MARKER.split(out)[-1]
    assert text.startswith(head) and text.endswith(tail)
    assert head.endswith("\n") and tail.startswith("line ")  # cut at line breaks
    match = MARKER.search(out)
    assert match is not None
    removed = int(match.group(1).replace(",", ""))
    assert removed == len(text) - len(head) - len(tail)
    assert int(match.group(2).replace(",", "")) == text.count("\n") - head.count("\n") - tail.count(
        "\n"
    )
    assert "bytes (" in out


def test_marker_without_line_count_when_no_line_was_removed() -> None:
    out, truncated = lw.truncate_output("x" * 10_000, 200)
    assert truncated
    assert "lines)" not in out
    match = MARKER.search(out)
    assert match is not None and match.group(2) is None


def test_never_splits_a_character() -> None:
    text = "日本語テキスト" * 500  # 3-byte characters
    out, truncated = lw.truncate_output(text, 301)
    assert truncated
    assert len(out.encode()) <= 301
    head, tail = MARKER.split(out)[0], MARKER.split(out)[-1]
    assert text.startswith(head) and text.endswith(tail)
    assert "\ufffd" not in out


def test_tiny_limit_keeps_only_the_head() -> None:
    out, truncated = lw.truncate_output("abcdefghij" * 10, 8)
    assert (out, truncated) == ("abcdefgh", True)


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        lw.truncate_output("x", 0)


@given(
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=600),
    st.integers(min_value=1, max_value=400),
)
def test_truncation_properties(text: str, limit: int) -> None:
    out, truncated = lw.truncate_output(text, limit)
    assert truncated == (len(text.encode()) > limit)
    if not truncated:
        assert out == text
        return
    assert len(out.encode()) <= limit
    parts = MARKER.split(out)
    head, tail = parts[0], parts[-1] if len(parts) > 1 else ""
    assert text.startswith(head)
    assert text.endswith(tail)
    if len(parts) > 1:
        removed = int(parts[1].replace(",", ""))
        assert removed == len(text.encode()) - len(head.encode()) - len(tail.encode())


def test_lone_surrogates_do_not_crash() -> None:
    out, truncated = lw.truncate_output("a\ud800b" * 100, 50)
    assert truncated
    assert len(out.encode("utf-8", errors="surrogatepass")) <= 50
