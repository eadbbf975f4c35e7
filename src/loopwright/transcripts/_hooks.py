"""How model calls, tool calls and log records reach the current transcript."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from .._errors import error_text
from .._ids import new_id
from ..model import ModelCall
from ..model._redact import error_summary, learn_call_secrets
from ..stores import current_store
from ._context import _pop, checkpoint_store
from ._current import _Scope, _scope
from ._events import NO_EVENTS, LoggerEvent, ModelEvent, SandboxEvent, ToolEvent
from ._transcript import Transcript

if TYPE_CHECKING:
    from ..sandboxes._record import SandboxOperation
    from ..tools import ToolExecution

__all__ = ["MODEL_HOOK", "TOOL_HOOK", "install_log_handler", "install_sandbox_recorder"]

_EVENT = "loopwright.transcripts.event"
_TRANSCRIPT = "loopwright.transcripts"
_TOKEN = "loopwright.transcripts.token"


def _recording() -> _Scope | None:
    """Where model and tool calls are recorded now: ``None`` outside a transcript, or in
    one that records no calls."""
    scope = _scope.get()
    if scope is None or not scope.transcript._root.record_calls:
        return None
    return scope


def _checkpoint(t: Transcript) -> None:
    """Record the store's changes, if there are any (cheap when there are none)."""
    s = current_store()
    if s is not None and s.dirty:
        checkpoint_store(t)


class _ModelHook:
    """Records each model call as a :class:`ModelEvent` in the current transcript."""

    def before_generate(self, call: ModelCall) -> None:
        scope = _recording()
        if scope is None:
            return
        t = scope.transcript
        _checkpoint(t)
        learn_call_secrets(call.model, call.config.extra_body)  # (what the store redacts)
        event_id = new_id()
        base, count, rest = t._model_input_refs(event_id, call.messages)
        tools = call.tools  # (a list: the one made for the call)
        # the call's own objects, held as they are (the tools list is the call's, made for
        # it; an event is a plain dataclass: nothing is validated again)
        ev = ModelEvent(
            id=event_id,
            span_id=scope.span_id,
            working_start=t.working_time(),
            model=call.model.name,
            input=rest,
            input_base=base,
            input_base_count=count,
            tools=tools if isinstance(tools, list) else list(tools),
            config=call.config,
            pending=True,
            step=True if call.step else None,
        )
        t._append(ev, scope.target())
        data = call.data
        data[_EVENT] = ev
        data[_TRANSCRIPT] = t

    def wait_began(self, call: ModelCall) -> None:
        t: Transcript | None = call.data.get(_TRANSCRIPT)
        if t is not None:
            t._root.waits.begin()

    def wait_ended(self, call: ModelCall, seconds: float) -> None:
        t: Transcript | None = call.data.get(_TRANSCRIPT)
        if t is not None:
            t._root.waits.end()

    def after_generate(self, call: ModelCall) -> None:
        data = call.data
        ev: ModelEvent | None = data.pop(_EVENT, None)
        t: Transcript | None = data.pop(_TRANSCRIPT, None)
        if ev is None or t is None:
            return
        out = call.output
        error = call.error
        _complete(
            ev,
            output=out,
            usage=out.usage if out is not None else None,
            cost=call.cost,
            fallbacks=data.get("fallbacks"),
            error=error_summary(error, call.model.api.secrets()) if error is not None else None,
            retries=call.retries,
            duration=call.duration,
            wait_time=call.wait_time,
            working_time=_working(call.duration, call.wait_time),
            pending=None,
        )
        if out is not None:
            t.add_messages((out.message,))
        if t._root.event_subscribers:
            t._update(ev)
        _checkpoint(t)


class _ToolHook:
    """Records each tool call as a :class:`ToolEvent`; events during the call (a
    sub-agent's model calls, store changes, info) are recorded within it."""

    def before_tool(self, ex: ToolExecution) -> None:
        scope = _recording()
        if scope is None:
            return
        t = scope.transcript
        _checkpoint(t)
        # its events list is made when the first event within it is recorded (_Scope)
        ev = ToolEvent(
            span_id=scope.span_id,
            working_start=t.working_time(),
            call=ex.call,
            events=NO_EVENTS,
            pending=True,
        )
        t._append(ev, scope.target())
        data = ex.data
        data[_EVENT] = ev
        data[_TRANSCRIPT] = t
        data[_TOKEN] = _scope.set(_Scope(t, NO_EVENTS, ev.id, ev))

    def after_tool(self, ex: ToolExecution) -> None:
        data = ex.data
        ev: ToolEvent | None = data.pop(_EVENT, None)
        t: Transcript | None = data.pop(_TRANSCRIPT, None)
        if ev is None or t is None:
            return
        try:
            _checkpoint(t)  # changes made by the tool, within its event
        finally:
            _pop(data.pop(_TOKEN))
        t.add_wait(ex.wait_time)  # waiting for the approval policy
        approval = ex.approval
        msg = ex.message
        _complete(
            ev,
            approval=approval,
            result=msg,
            error=msg.error if msg is not None else None,
            failure=_bounded(error_text(ex.error)) if ex.error is not None else None,
            traceback=_traceback(ex.error),
            truncated=ex.truncated,
            duration=ex.duration,
            working_time=_working(ex.duration, ex.wait_time),
            pending=None,
        )
        if approval is not None and approval.decision == "modify" and approval.modified:
            ev.call = approval.modified
        if msg is not None:
            t.add_messages((msg,))
        if t._root.event_subscribers:
            t._update(ev)


def _complete(event: ModelEvent | ToolEvent, **values: Any) -> None:
    """Set what a pending event learnt when its call ended (plain attributes of a
    slotted dataclass: a name that is no field raises ``AttributeError``)."""
    for name, value in values.items():
        setattr(event, name, value)


def _working(duration: float, waited: float) -> float:
    """``duration - waited`` (at least 0): ``duration`` itself when nothing waited (the
    event keeps the one float, not an equal new one: most calls wait for nothing)."""
    return max(0.0, duration - waited) if waited else duration


MAX_FAILURE = 16_000
"""The most characters of a tool's failure (and of its traceback) that are recorded."""


def _bounded(text: str, head: int = MAX_FAILURE, tail: int = 0) -> str:
    """``text``, or its first ``head`` and last ``tail`` characters around a marker."""
    if len(text) <= head + tail:
        return text
    end = text[len(text) - tail :] if tail else ""
    return f"{text[:head]}\n[{len(text) - head - tail} characters cut]\n{end}"


def _traceback(error: BaseException | None) -> str | None:
    """The traceback of an error a tool raised; none for a cancellation, an interrupt or
    an approval policy's termination (the run ends on purpose)."""
    from ..tools import ToolTerminated

    if not isinstance(error, Exception) or isinstance(error, ToolTerminated):
        return None
    if error.__traceback__ is None:
        return None
    import traceback

    try:
        text = "".join(traceback.format_exception(error))
    except Exception:  # a broken __str__ or the like: the failure text says enough
        return None
    # the first frames say where, the last ones and the error what
    return _bounded(text, MAX_FAILURE // 4, MAX_FAILURE - MAX_FAILURE // 4)


MODEL_HOOK = _ModelHook()
"""The model hook that records model calls (``transcript_context`` installs it)."""
TOOL_HOOK = _ToolHook()
"""The tool hook that records tool calls (``transcript_context`` installs it)."""


def _record_sandbox(op: SandboxOperation) -> None:
    """A sandbox operation, as a ``SandboxEvent`` of the current transcript (if any)."""
    scope = _scope.get()
    if scope is None:
        return
    scope.transcript._record(
        SandboxEvent(
            action=op.action,
            cmd=op.cmd,
            file=op.file,
            input=op.input_text(),
            result=op.result.returncode if op.result is not None else None,
            output=op.output_text(),
            duration=op.duration,
        )
    )


_sandbox_recorder_set = False


def install_sandbox_recorder() -> None:
    """Record sandbox operations in the current transcript (once per process)."""
    global _sandbox_recorder_set
    if _sandbox_recorder_set:
        return
    from ..sandboxes._record import set_sandbox_recorder

    set_sandbox_recorder(_record_sandbox)
    _sandbox_recorder_set = True


# --- logging -----------------------------------------------------------------------------
class _LogHandler(logging.Handler):
    """Turns log records into ``LoggerEvent``\\ s of the current transcript."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        scope = _scope.get()
        if scope is None:
            self._last_resort(record)
            return
        t = scope.transcript
        if record.levelno < t.log_level or getattr(self._busy, "on", False):
            return
        self._busy.on = True
        try:
            message = record.getMessage()
            if record.exc_info:
                message = f"{message}\n{logging.Formatter().formatException(record.exc_info)}"
            t._record(
                LoggerEvent(
                    level=record.levelname,
                    levelno=record.levelno,
                    logger=record.name,
                    message=message,
                    filename=record.pathname,
                    lineno=record.lineno,
                )
            )
        except Exception:
            self.handleError(record)
        finally:
            self._busy.on = False

    def _last_resort(self, record: logging.LogRecord) -> None:
        """Outside runs, behave as if this handler were not there: Python prints
        warnings of unconfigured programs through ``logging.lastResort``."""
        last = logging.lastResort
        if last is None or record.levelno < last.level:
            return
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return
            if not logger.propagate:
                break
            logger = logger.parent
        last.handle(record)


_handler: _LogHandler | None = None
_handler_lock = threading.Lock()


def install_log_handler() -> None:
    """Install (once per process) the handler that captures log records into the
    current transcript, on the root logger."""
    global _handler
    if _handler is not None:
        return
    with _handler_lock:
        if _handler is None:
            _handler = _LogHandler()
            logging.getLogger().addHandler(_handler)
