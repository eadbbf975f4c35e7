"""The SDK's client session, its check of a tool's structured content made off the event
loop when it takes long.

The SDK checks a ``tools/call`` answer's structured content against the tool's output
schema with jsonschema, in this process, on the event loop: a server's schema may hold
a pattern that backtracks without end. The check's patterns are matched in bounded time
(:mod:`loopwright._patterns`, drawing on the model reply's budget like the calls'
arguments); the check is made on the loop while its matches fit
:data:`~loopwright._patterns.LOOP_SLICE`, else made again in a worker thread (the loop
free meanwhile, so a run's time limit and cancellation go on; cancelled, the thread's
check stops at its next match). In the thread the SDK's ``validate_tool_result``
coroutine is driven by hand: once it reached the check, the tool's output schema is
known to the session, and the check awaits nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopwright._patterns import OffLoop, PatternsTooSlow, bounded_patterns, on_loop
from loopwright.tools._threads import run_in_thread

if TYPE_CHECKING:
    from mcp import ClientSession

__all__ = ["session_class"]

_made: type[ClientSession] | None = None


def session_class() -> type[ClientSession]:
    """``mcp.ClientSession``, its structured-content check off the loop when slow."""
    global _made
    if _made is not None:
        return _made
    from mcp import ClientSession

    class CheckedSession(ClientSession):
        async def validate_tool_result(self, name: str, result: Any) -> None:
            check = super().validate_tool_result
            try:
                with on_loop(), bounded_patterns():
                    return await check(name, result)
            except PatternsTooSlow:
                pass
            if name not in getattr(self, "_tool_output_schemas", {}):  # (not in this SDK)
                with bounded_patterns():  # on the loop, as the SDK would
                    return await check(name, result)
            off = OffLoop()
            try:
                await run_in_thread(off.run, _check_in_thread, check, name, result)
            finally:
                off.stop()  # cancelled: the thread's next match is refused

    _made = CheckedSession
    return _made


def _check_in_thread(check: Any, name: str, result: Any) -> None:
    with bounded_patterns():
        coro = check(name, result)
        try:
            coro.send(None)
        except StopIteration:
            return
        coro.close()
        raise RuntimeError(f"the check of tool {name!r}'s structured content waited for I/O")
