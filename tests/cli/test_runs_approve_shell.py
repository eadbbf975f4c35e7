"""The commands ``runs approve`` prints for a person to paste into a shell run what they
say: a call id or run id from a model or a store from elsewhere (``$(...)``, ``;``, a
lookalike letter, a bidi override) is quoted for the shell, so pasting a command never
runs anything else, and it names exactly the call it was printed for. Real run store,
the real command, pasted into a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loopwright as lw
from loopwright._terminal import shell_word

from ._cli import cli, env_for
from .test_runs_approve_shown import states, waiting

# call ids a model may give (visible ASCII, no space: others are replaced by fresh ones)
HOSTILE = [
    "x;touch${IFS}pwned-1",
    "$(touch${IFS}pwned-2)",
    "`touch${IFS}pwned-3`",
    "it's~#4",
    "a|touch${IFS}pwned-5&&b",
    "~",
    "x>pwned-7",
]
# and more a store from elsewhere may hold (any text)
ANY = [*HOSTILE, "d\u0435ploy", "a\u202eb\u200bc", "tab\there", "x; rm -rf ~", "new\nline"]


def paste(command: str, cwd: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into bash, ``loopwright`` being this checkout's CLI."""
    env = env_for(db) | {"LC_ALL": "C.UTF-8"}
    define = f'loopwright() {{ "{sys.executable}" -m loopwright.cli "$@"; }}\n'
    return subprocess.run(
        ["bash", "-c", define + command],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_each_printed_approve_command_names_its_call_and_runs_nothing_else(
    tmp_path: Path,
) -> None:
    import asyncio

    calls = [lw.ToolCall(id=i, function="bash", arguments={"cmd": f"ls {n}"})
             for n, i in enumerate(HOSTILE)]  # fmt: skip
    db, run_id = asyncio.run(waiting(tmp_path, calls))
    listed = cli("runs", "approve", run_id, cwd=tmp_path, db=db, columns=None)
    assert listed.code == 0, listed.err
    commands = [line.split("approve it: ", 1)[1] for line in listed.out.splitlines()
                if "approve it: " in line]  # fmt: skip
    assert len(commands) == len(HOSTILE), listed.out
    for command in commands:
        done = paste(command, tmp_path, db)
        assert done.returncode == 0, (command, done.stderr)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")]
    assert states(db, run_id) == dict.fromkeys(HOSTILE, "approve")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("text", [*ANY, "plain-id_1.2:3", "", "'", "\\", "\x00x", "e\U0001f600"])
def test_a_shell_word_is_given_back_whole_by_bash(text: str, tmp_path: Path) -> None:
    if "\x00" in text:  # (no program gets a NUL in an argument: shown, never a word)
        assert "\\x00" in shell_word(text)
        return
    got = subprocess.run(
        ["bash", "-c", f"printf '%s' {shell_word(text)}"],
        cwd=tmp_path, env=dict(os.environ, LC_ALL="C.UTF-8"), capture_output=True, timeout=10,
    )  # fmt: skip
    assert got.stdout.decode("utf-8") == text
    word = shell_word(text)
    assert word.isprintable() and word.isascii()  # (every character seen)
    assert not list(tmp_path.iterdir())
