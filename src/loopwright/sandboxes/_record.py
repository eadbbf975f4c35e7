"""How sandbox operations reach the run's record, without the sandbox importing it.

The transcript is above the sandbox in the parts' order (``tests/test_layers.py``), so
the sandbox reports each operation as a :class:`SandboxOperation` to the one recorder set
with :func:`set_sandbox_recorder`; the transcript sets its recorder when a transcript is
first made current, and turns an operation into a ``SandboxEvent`` when there is a
current transcript. Without a recorder an operation costs one check.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ._types import ExecResult

__all__ = ["SandboxOperation", "SandboxRecorder", "report", "set_sandbox_recorder"]

_EVENT_TEXT = 2000


@dataclass(frozen=True, slots=True)
class SandboxOperation:
    """One sandbox operation as it happened (raw: :meth:`input_text` and
    :meth:`output_text` give its bounded text)."""

    action: Literal["exec", "read_file", "write_file"]
    duration: float
    cmd: list[str] | None = None
    file: str | None = None
    input: bytes | None = None
    result: ExecResult | None = None
    output: bytes | None = None
    note: str | None = None

    def input_text(self) -> str | None:
        """What was sent (stdin, a file's content), at most ~2000 characters."""
        return _abbreviate(self.input.decode("utf-8", errors="replace")) if self.input else None

    def output_text(self) -> str | None:
        """What came back (output and errors, a file's content), at most ~2000 characters."""
        text = None
        if self.result is not None:
            result = self.result
            text = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
            if result.truncated:
                text += "\n[output truncated]"
            if self.note:
                text += f"\n[{self.note}]"
        elif self.output is not None:
            text = self.output.decode("utf-8", errors="replace")
        return _abbreviate(text) if text is not None else None


SandboxRecorder = Callable[[SandboxOperation], None]
_recorder: list[SandboxRecorder] = []


def set_sandbox_recorder(recorder: SandboxRecorder) -> None:
    """Report every sandbox operation to ``recorder`` from now on (replacing any other)."""
    _recorder[:] = [recorder]


def report(
    action: Literal["exec", "read_file", "write_file"],
    started: float,
    *,
    cmd: list[str] | None = None,
    file: str | None = None,
    input: bytes | None = None,
    result: ExecResult | None = None,
    output: bytes | None = None,
    note: str | None = None,
) -> None:
    """Report an operation begun at ``started`` (``time.monotonic()``) to the recorder."""
    if not _recorder:
        return
    _recorder[0](
        SandboxOperation(
            action=action,
            duration=time.monotonic() - started,
            cmd=cmd,
            file=file,
            input=input,
            result=result,
            output=output,
            note=note,
        )
    )


def _abbreviate(text: str) -> str:
    """``text`` cut to its first and last ~1000 characters; each end with the secrets
    learnt redacted before it is cut, so none is cut in two and half of it kept (the
    run store redacts a whole secret, not a half)."""
    if len(text) <= _EVENT_TEXT:
        return text
    from ..model._redact import redact_known

    half = _EVENT_TEXT // 2
    head = redact_known(text[: half + _SLACK], plain=True)[:half]
    tail = redact_known(text[-(half + _SLACK) :], plain=True)[-half:]
    return f"{head}\n[... {len(text) - _EVENT_TEXT} characters ...]\n{tail}"


_SLACK = 4096  # characters redacted beyond a cut: more than any secret's longest form
