"""``_terminal.shell_word``: a word of a command printed for a person to paste, given
back whole by a real bash and showing every character (the commands that use it are
pasted in ``tests/cli/test_runs_approve_words.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loopwright._terminal import NOT_SHOWN, shell_word

WORDS = [
    "x;touch${IFS}pwned-1",
    "$(touch${IFS}pwned-2)",
    "`touch${IFS}pwned-3`",
    "it's~#4",
    "a|touch${IFS}pwned-5&&b",
    "~",
    "x>pwned-7",
    "d\u0435ploy",  # a Cyrillic e
    "a\u202eb\u200bc",  # a bidi override, a zero-width space
    "tab\there",
    "new\nline",
    "plain-id_1.2:3",
    "",
    "'",
    "\\",
    "e\U0001f600",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("text", WORDS)
def test_a_shell_word_is_given_back_whole_by_bash(text: str, tmp_path: Path) -> None:
    word = shell_word(text)
    assert word.isprintable() and word.isascii()  # (every character seen)
    got = subprocess.run(
        ["bash", "-c", f"printf '%s' {word}"],
        cwd=tmp_path, env=dict(os.environ, LC_ALL="C.UTF-8"), capture_output=True, timeout=10,
    )  # fmt: skip
    assert got.stdout.decode("utf-8") == text
    assert not list(tmp_path.iterdir())  # (nothing in it ran)


def test_a_plain_word_is_left_as_it_is_and_a_long_one_says_it_was_cut() -> None:
    assert shell_word("call_1:a.b/c-d") == "call_1:a.b/c-d"
    long = shell_word("x" * 300, limit=50)
    assert NOT_SHOWN.format(cut=250) in long and len(long) < 100
