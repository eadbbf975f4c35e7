"""Counts the matches ``regex`` makes for ``loopwright._patterns`` (tools' arguments, MCP
answers' structured content), in any thread: how many began, how many still run, and
which ran longer than the event loop's slice, off the loop's thread or on it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from loopwright import _patterns


class Spy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.begun = self.running = 0
        self.long_on_loop = self.long_off_loop = 0  # matches allowed past the slice
        self._lock = threading.Lock()
        real = _patterns._compile
        spy = self

        class Counted:
            def __init__(self, compiled: Any) -> None:
                self.compiled = compiled

            def search(self, text: str, *, timeout: float) -> Any:
                on_loop = threading.current_thread() is threading.main_thread()
                with spy._lock:
                    spy.begun += 1
                    spy.running += 1
                    if timeout > getattr(_patterns, "LOOP_SLICE", 0.02):
                        if on_loop:
                            spy.long_on_loop += 1
                        else:
                            spy.long_off_loop += 1
                try:
                    return self.compiled.search(text, timeout=timeout)
                finally:
                    with spy._lock:
                        spy.running -= 1

        def compile_counted(pattern: str) -> Any:
            compiled = real(pattern)
            return compiled if isinstance(compiled, str) else Counted(compiled)

        monkeypatch.setattr(_patterns, "_compile", compile_counted)

    async def settled(self) -> int:
        """Once no match runs, and none began for a while: how many began."""
        for _ in range(100):
            await asyncio.sleep(0.1)
            if self.running == 0:
                break
        begun = self.begun
        await asyncio.sleep(1.0)  # a check that went on would begin its next match
        assert self.begun == begun and self.running == 0
        return begun
