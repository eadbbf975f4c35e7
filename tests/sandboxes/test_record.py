"""Sandbox operations reach the current transcript through the recorder the transcript
sets (``sandbox/_record.py``), so the sandbox does not import the transcript."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

from loopwright.sandboxes import use_sandbox
from loopwright.transcripts import SandboxEvent, Transcript, transcript_context


async def test_operations_are_recorded_with_bounded_text() -> None:
    t = Transcript()
    with transcript_context(t), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with use_sandbox("local") as sb:
            await sb.write_file("f.txt", "x" * 10_000)
            await sb.exec(["cat", "f.txt"])
            await sb.read_file("f.txt")
    events = [e for e in t.events if isinstance(e, SandboxEvent)]
    assert [e.action for e in events] == ["write_file", "exec", "read_file"]
    assert all(len(e.input or "") < 2100 and len(e.output or "") < 2100 for e in events)
    assert "characters ..." in (events[1].output or "")


def test_a_transcript_made_outside_a_run_records_them_too() -> None:
    """``lw.transcript()`` outside a run, in a fresh process (no transcript_context ever
    entered), still records the sandbox's operations."""
    script = textwrap.dedent(
        """
        import asyncio, warnings
        import loopwright as lw
        from loopwright.sandboxes import use_sandbox
        warnings.simplefilter("ignore")

        async def main():
            t = lw.transcript()
            async with use_sandbox("local") as sb:
                await sb.exec(["echo", "hi"])
            print([e.event for e in t.events])

        asyncio.run(main())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "'sandbox'" in out.stdout, out.stdout + out.stderr
