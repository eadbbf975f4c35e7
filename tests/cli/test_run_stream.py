"""``loopwright run`` streams the model's text: to a terminal as it is written, as plain
lines otherwise; ``--no-stream`` turns it off."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.model.providers.sse_server import SSEServer, Stream, openai_text_stream

from ._cli import cli, env_for, script


def test_piped_output_gets_plain_lines_before_the_step_line(tmp_path: Path) -> None:
    reply = "Hello \x1b[31mworld\x1b[0m.\nSecond [bold red]line[/]."
    outputs = script(tmp_path / "s.json", [reply])
    streamed = cli("run", "hi", "-m", "mock", "-M", outputs, cwd=tmp_path)
    assert streamed.code == 0
    err = streamed.err.splitlines()
    # escaped, not acted on; never read as rich markup
    # quoted: each line of the model's text begins with the gutter
    assert err[:2] == ["  │ Hello \\x1b[31mworld\\x1b[0m.", "  │ Second [bold red]line[/]."]
    assert err[2].startswith("step 1")
    assert streamed.err.count("Second [bold red]line[/].") == 1  # not repeated at the step end
    assert "\x1b" not in streamed.err
    assert streamed.out == "Hello \\x1b[31mworld\\x1b[0m.\nSecond [bold red]line[/].\n"


def test_no_stream_shows_each_reply_once_complete(tmp_path: Path) -> None:
    outputs = script(tmp_path / "s.json", ["All at once."])
    plain = cli("run", "hi", "-m", "mock", "-M", outputs, "--no-stream", cwd=tmp_path)
    assert plain.code == 0
    err = plain.err.splitlines()
    assert err[0].startswith("step 1") and err[1] == "  │ All at once."


def test_a_terminal_sees_the_text_before_the_reply_is_complete(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    gate = threading.Event()
    with SSEServer() as sse:
        reply = openai_text_stream(["Streaming ", "works", " fine."])
        sse.push(Stream(reply, gate=gate, gate_after=3))  # role, "Streaming ", "works"
        controller, terminal = pty.openpty()
        env = env_for(tmp_path / "runs.db")
        proc = subprocess.Popen(
            [sys.executable, "-m", "loopwright.cli", "run", "hi", "-m", "openai/m",
             "-M", f"base_url={sse.url}/v1", "-M", "api_key=k"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=terminal,
        )  # fmt: skip
        os.close(terminal)
        seen = b""
        deadline = time.monotonic() + 60
        try:
            while b"works" not in seen and time.monotonic() < deadline:
                ready, _, _ = select.select([controller], [], [], 0.5)
                if ready:
                    seen += os.read(controller, 4096)
            # the first pieces are on the terminal while the server still holds the rest
            assert b"Streaming works" in seen
            assert b"fine." not in seen
        finally:
            gate.set()
        out, _ = proc.communicate(timeout=60)
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        os.close(controller)
    assert proc.returncode == 0
    assert out == b"Streaming works fine.\n"
    assert b"fine." in seen and seen.count(b"Streaming works fine.") == 1


def test_a_thought_and_the_answer_are_separate_lines() -> None:
    """A reasoning delta followed by text (the json protocol's parsed thought, then the
    answer) is never run together into one line, piped or on a terminal."""
    import io
    import re

    from rich.console import Console

    from loopwright.cli._stream_view import StreamingDisplay
    from loopwright.model import ReasoningDelta, TextDelta

    for terminal in (False, True):
        out = io.StringIO()
        view = StreamingDisplay(Console(file=out, force_terminal=terminal, no_color=True))
        view.delta(ReasoningDelta("The answer is ."))
        view.delta(TextDelta("149265"))
        view.delta(TextDelta(".0"))
        view._end_text()
        lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()  # (dimmed)
        assert lines == ["  │ The answer is .", "  │ 149265.0"], (terminal, lines)
