"""``execute_tools``: run the tool calls of an assistant message, safely and in order."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Generator, Sequence
from typing import Any, Protocol

from .._errors import ConfigurationError
from .._patterns import reply_patterns
from .._timers import deadline
from ..model import (
    DEFAULT_MAX_TOOL_OUTPUT,
    AssistantMessage,
    ChatMessage,
    ToolCall,
    ToolCallError,
    ToolCallErrorType,
    ToolMessage,
)
from ..model.protocols import FORMAT_ERROR_FUNCTION
from ._answer import current_answer
from ._approval import Approval, current_approver
from ._bind_call import bind_call
from ._error_text import exception_text, os_error_text, unknown_tool
from ._errors import (
    OutputLimitExceededError,
    ToolArgumentsError,
    ToolDeferred,
    ToolError,
    ToolTerminated,
)
from ._hooks import ToolExecution, ToolHook
from ._hooks import _hooks as _tool_hooks
from ._output import result_text, truncate_output
from ._tool import Tool
from ._tool_checks import not_a_tool

__all__ = ["DEFAULT_MAX_PARALLEL", "ToolGate", "execute_tools"]


class ToolGate(Protocol):
    """What ``lw.Hooks`` do to each call, in its context: ``before`` may deny it (the
    message becomes its ``approval`` error); ``after`` may replace its result, before
    the tool hooks (the transcript) see it."""

    async def before(self, call: ToolCall) -> str | None: ...

    async def after(self, call: ToolCall, result: ToolMessage) -> ToolMessage: ...


DEFAULT_MAX_PARALLEL = 8
"""How many parallel tool calls run at once, by default."""


class _Run:
    """What every call of one ``execute_tools`` shares."""

    __slots__ = ("gate", "max_output", "max_parallel", "messages", "slots", "tools")

    def __init__(
        self,
        tools: dict[str, Tool[..., Any]],
        max_output: int,
        messages: Sequence[ChatMessage],
        max_parallel: int,
        gate: ToolGate | None = None,
    ) -> None:
        self.gate = gate
        self.tools = tools
        self.max_output = max_output
        self.messages = messages
        self.max_parallel = max_parallel
        self.slots: asyncio.Semaphore | None = None  # made by the first parallel batch


async def execute_tools(
    message: AssistantMessage,
    tools: Sequence[Tool[..., Any]],
    *,
    max_output: int | None = None,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
    messages: Sequence[ChatMessage] = (),
    gate: ToolGate | None = None,
) -> list[ToolMessage]:
    """Run the tool calls of ``message`` and return their results, in the calls' order.

    - Consecutive calls of tools marked ``parallel`` run concurrently (at most
      ``max_parallel`` at once); any other call runs alone, after the calls before it
      finished and before the calls after it start.
    - Sync tools run in worker threads. Every call runs in its own context (a copy of
      the caller's: contextvars it sets do not leak out); calls that run together run
      in their own asyncio tasks, a call alone in the caller's task.
    - Before a call runs, the approval policy in force (``loopwright.approver``) is
      asked: ``approve`` runs it, ``modify`` runs the modified call, ``reject`` and an
      unanswered ``escalate`` tell the model why (an ``approval`` error), ``terminate``
      raises :class:`ToolTerminated` once the other calls finished or were cancelled,
      ``defer`` raises :class:`ToolDeferred` once the calls beside it finished (the
      calls after it are not run).
    - Expected failures become ``ToolMessage.error`` and the run goes on: an unknown
      tool, unparseable or invalid arguments (or arguments whose schema's patterns
      could not be matched in time: the calls share 2 s, see ``_bind_call``), a
      :class:`ToolError`, a timeout, ``PermissionError``, ``FileNotFoundError``, an
      output limit, an exception the tool lists in ``errors_to_model``.
    - Any other exception is a bug: the other calls are cancelled and it propagates,
      with a note naming the tool and the call id.
    - Output longer than ``max_output`` bytes is cut in the middle (see
      :func:`truncate_output`).

    Args:
        message: The assistant message whose ``tool_calls`` to run.
        tools: The tools available (names must be unique).
        max_output: The most bytes of output a call may return (default 16 KiB; ``0``
            for no limit).
        max_parallel: The most parallel calls running at once.
        messages: The conversation so far, shown to the approval policy.
        gate: The agent's lifecycle hooks for each call (see :class:`ToolGate`).

    Raises:
        ToolTerminated: An approval policy ended the run.
        ToolDeferred: An approval policy deferred a call: the run waits for a decision.
        ConfigurationError: Something in ``tools`` is not a ``Tool``, two tools share a
            name, or a limit is invalid.
    """
    calls = message.tool_calls
    if not calls:
        return []
    by_name: dict[str, Tool[..., Any]] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise ConfigurationError(f"{not_a_tool(t)}.")
        other = by_name.setdefault(t.name, t)
        if other is not t:
            raise ConfigurationError(
                f"Two tools are named {t.name!r}; rename one with tool_with(tool, name=...)."
            )
    if max_output is None:
        max_output = DEFAULT_MAX_TOOL_OUTPUT
    if max_output < 0:
        raise ConfigurationError(f"max_output must be >= 0 (0: no limit), got {max_output}.")
    if max_parallel < 1:
        raise ConfigurationError(f"max_parallel must be >= 1, got {max_parallel}.")
    run = _Run(by_name, max_output, messages, max_parallel, gate)
    results: list[ToolMessage] = []
    with reply_patterns():  # the calls' pattern matching: 2 s for all (_bind_call.py)
        for batch in _batches(calls, by_name):
            try:
                if len(batch) == 1:
                    results.append(await _Alone(batch[0], run))
                else:
                    results.extend(await _run_batch(batch, run))
            except (ToolTerminated, ToolDeferred) as ex:
                ex.messages = results + ex.messages
                raise
    return results


def _batches(calls: Sequence[ToolCall], tools: dict[str, Tool[..., Any]]) -> list[list[ToolCall]]:
    """Group consecutive calls that may run together; every other call is alone."""
    batches: list[list[ToolCall]] = []
    open_batch = False
    for call in calls:
        t = tools.get(call.function)
        # a call that cannot run (unknown tool, unparsed arguments) only reports an error
        together = t is None or t.parallel or call.parse_error is not None
        if together and open_batch:
            batches[-1].append(call)
        else:
            batches.append([call])
        open_batch = together
    return batches


class _Alone:
    """``await _Alone(call, run)``: one call alone, in the caller's task but in a copy
    of its context.

    What a task per call gave a call alone (contextvars set by the call stay in it;
    cancelling the caller cancels the call, which may clean up), without the task: its
    creation and the two trips through the event loop cost more than the rest of a
    cheap call. Each step of the call's coroutine runs in the copied context; whatever
    it waits for is waited for by the caller's task, and whatever is thrown into that
    task (cancellation, a future's exception) is thrown into the coroutine. (An object
    whose ``__await__`` drives the call, not a coroutine around it: a live call keeps
    one frame less.)
    """

    __slots__ = ("call", "run")

    def __init__(self, call: ToolCall, run: _Run) -> None:
        self.call = call
        self.run = run

    def __await__(self) -> Generator[Any, Any, ToolMessage]:
        me = asyncio.current_task()
        cancels = me.cancelling() if me is not None else 0
        context = contextvars.copy_context()
        coro = _execute_call(self.call, self.run)
        send: Any = None
        error: BaseException | None = None
        try:
            while True:
                try:
                    if error is None:
                        waited = context.run(coro.send, send)
                    else:
                        waited, error = context.run(coro.throw, error), None
                except StopIteration as done:
                    result: ToolMessage = done.value
                    break
                try:
                    send = yield waited
                except GeneratorExit:
                    context.run(coro.close)
                    raise
                except BaseException as thrown:
                    send, error = None, thrown
        except (ToolTerminated, ToolDeferred) as ex:
            ex.messages = []  # (no call of this batch finished)
            raise
        if me is not None and me.cancelling() > cancels:
            raise asyncio.CancelledError()  # we were cancelled but the tool swallowed it
        return result


async def _run_batch(batch: list[ToolCall], run: _Run) -> list[ToolMessage]:
    """Calls that may run together, each in its own task."""
    if run.slots is None:
        run.slots = asyncio.Semaphore(run.max_parallel)
    tasks = [
        asyncio.create_task(_slotted(call, run), name=f"tool {call.function} {call.id}")
        for call in batch
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks)  # let every call clean up (its after_tool hooks run)
        raise
    failed = [t for t in tasks if t.done() and (t.cancelled() or t.exception() is not None)]
    if not failed:
        ran = [r for t in tasks if isinstance(r := t.result(), ToolMessage)]
        if len(ran) < len(tasks):  # deferred: the calls beside them ran, results kept
            waits = [d for t in tasks if isinstance(d := t.result(), ToolDeferred)]
            raise ToolDeferred([x for d in waits for x in d.deferred], ran)
        return ran
    pending = [t for t in tasks if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending)
    errors = [t.exception() for t in failed if not t.cancelled()]
    if not errors:
        raise asyncio.CancelledError()  # a tool cancelled itself: pass it on
    first = errors[0]
    assert first is not None
    for other in errors[1:]:
        first.add_note(f"(another call of the same message also failed: {other!r})")
    if isinstance(first, ToolTerminated):
        first.messages = [
            r
            for t in tasks
            if t.done() and not t.cancelled() and t.exception() is None
            if isinstance(r := t.result(), ToolMessage)
        ]
    raise first


async def _slotted(call: ToolCall, run: _Run) -> ToolMessage | ToolDeferred:
    """A call of a parallel batch: at most ``max_parallel`` run at once; a deferred one
    is returned, so the others go on."""
    assert run.slots is not None
    async with run.slots:
        try:
            return await _execute_call(call, run)
        except ToolDeferred as deferred:
            return deferred


async def _execute_call(call: ToolCall, run: _Run) -> ToolMessage:
    ex = ToolExecution(call=call, tool=run.tools.get(call.function))
    hooks = _tool_hooks.get()
    entered = 0
    start = time.perf_counter()
    try:
        for hook in hooks:
            hook.before_tool(ex)
            entered += 1
        if run.gate is None:
            ex.message = await _produce(ex, run)
        else:
            denial = await run.gate.before(call)
            if denial is not None:
                ex.message = _error(ex, "approval", denial, run)
            else:
                ex.message = await run.gate.after(call, await _produce(ex, run))
        return ex.message
    except BaseException as err:
        ex.error = err
        raise
    finally:
        ex.duration = time.perf_counter() - start
        if entered:
            _after(hooks[:entered], ex)


def _after(hooks: Sequence[ToolHook], ex: ToolExecution) -> None:
    """Run every ``after_tool``; a failing hook does not stop the others."""
    failure: BaseException | None = None
    for hook in hooks:
        try:
            hook.after_tool(ex)
        except Exception as err:
            failure = failure or err
    if failure is None:
        return
    if ex.error is not None:
        ex.error.add_note(f"(an after_tool hook also failed: {failure!r})")
        return
    raise failure


def _error(ex: ToolExecution, kind: ToolCallErrorType, text: str, run: _Run) -> ToolMessage:
    if run.max_output:
        text, truncated = truncate_output(text, run.max_output)
        ex.truncated = ex.truncated or truncated
    call = ex.call
    return ToolMessage(
        tool_call_id=call.id,
        function=call.function,
        content=text,
        error=ToolCallError(type=kind, message=text),
    )


async def _produce(ex: ToolExecution, run: _Run) -> ToolMessage:
    call = ex.call
    if (answer := current_answer()) is not None and (answered := await answer(call)):
        return answered  # answered without running the tool (replay: tools/_answer.py)
    if call.parse_error is not None:
        return _error(ex, "parsing", _parse_message(call), run)
    tool = ex.tool
    if tool is None:
        return _error(ex, "unknown_tool", unknown_tool(call.function, run.tools), run)
    try:
        args, kwargs = await bind_call(tool, call.arguments)
    except ToolArgumentsError as err:
        return _error(ex, "validation", err.message, run)

    approver = current_approver()
    if approver is not None:
        waited = time.perf_counter()
        approval = await approver(call, run.messages)
        ex.wait_time += time.perf_counter() - waited
        if not isinstance(approval, Approval):
            raise ConfigurationError(
                f"the approver returned {approval!r}; an approver must return an "
                "Approval(decision=...)"
            )
        ex.approval = approval
        by = f" by {approval.approver}" if approval.approver else ""
        why = f": {approval.explanation}" if approval.explanation else "."
        if approval.decision == "terminate":
            raise ToolTerminated(approval.explanation, call=call, approval=approval)
        if approval.decision == "defer":
            raise ToolDeferred([(call, approval)])
        if approval.decision == "reject":
            return _error(ex, "approval", f"The call was rejected{by}{why}", run)
        if approval.decision == "escalate":
            text = f"The call was not approved: no approval policy accepted it{why}"
            return _error(ex, "approval", text, run)
        if approval.decision == "modify":
            modified = approval.modified
            if modified is None:
                raise ConfigurationError(
                    f"The approval policy{by} answered 'modify' without a modified call."
                )
            if modified.parse_error is not None:
                return _error(ex, "parsing", _parse_message(modified), run)
            tool = run.tools.get(modified.function)
            ex.tool = tool
            if tool is None:
                return _error(ex, "unknown_tool", unknown_tool(modified.function, run.tools), run)
            if tool.terminal and modified.function != call.function:
                # the result answers the original call: a terminal tool's answer would
                # not end the run
                raise ConfigurationError(
                    f"The approval policy{by} answered 'modify' with a call to the terminal "
                    f"tool {modified.function!r} for a call to {call.function!r}; it may "
                    "redirect a call to another tool, but not to a terminal one."
                )
            try:
                args, kwargs = await bind_call(tool, modified.arguments)
            except ToolArgumentsError as err:
                return _error(ex, "validation", err.message, run)

    timeout = tool.timeout
    scope: asyncio.Timeout | None = None
    try:
        if timeout is None:
            result = await tool._invoke(args, kwargs)
        else:
            async with deadline(timeout) as scope:
                result = await tool._invoke(args, kwargs)
    except TimeoutError as err:
        if scope is not None and scope.expired():
            text = (
                f"Tool {tool.name!r} did not finish within {timeout:g} seconds; "
                "the call was cancelled."
            )
        else:
            text = f"Tool {tool.name!r} timed out: {str(err) or 'no details'}"
        return _error(ex, "timeout", text, run)
    except OutputLimitExceededError as err:
        text = err.message
        if err.truncated_output:
            text += f"\n\nThe output that fits:\n{err.truncated_output}"
        return _error(ex, "output_limit", text, run)
    except ToolError as err:
        return _error(ex, err.error_type, err.message, run)
    except PermissionError as err:
        return _error(ex, "permission", os_error_text(err, "Permission denied"), run)
    except FileNotFoundError as err:
        return _error(ex, "file_not_found", os_error_text(err, "No such file or directory"), run)
    except Exception as err:
        if isinstance(err, tool.errors_to_model):
            return _error(ex, "tool_error", exception_text(err), run)
        err.add_note(f"(raised by tool {tool.name!r}, call id {call.id})")
        raise

    text = result_text(result)
    if run.max_output and len(text) * 4 > run.max_output:  # (else it fits in any case)
        text, ex.truncated = truncate_output(text, run.max_output)
    return ToolMessage(tool_call_id=call.id, function=call.function, content=text)


def _parse_message(call: ToolCall) -> str:
    if call.function == FORMAT_ERROR_FUNCTION:
        # a text protocol could not find any action: its message already says it all
        return str(call.parse_error)
    return (
        f"Could not parse the arguments of the call to {call.function!r}: {call.parse_error}. "
        "Send the arguments as a JSON object matching the tool's parameters."
    )
