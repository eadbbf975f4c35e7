"""``TraceBuilder``: the OpenTelemetry spans of one transcript, built from its events.

One builder per top-level transcript (a run's, an eval sample's). It is fed each event
as it is recorded and again when a pending event completes (live tracing), or each
completed event once in the order they began (a run read back from the run store); the
spans are the same either way, their times taken from the events.

The tree: the run's ``invoke_agent`` span; in it a ``step N`` span per agent step (a
model call and what follows it in the same scope); in a step the ``chat`` span of the
model call and the ``execute_tool`` spans of its tool calls; within a tool call the
events recorded during it (a sub-agent's run is an ``invoke_agent`` span); subtasks and
``span()`` blocks are spans of their own. Limits, approvals, info and log records are
span events; an error that ended the run is an ``exception`` event and the error status.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from ..model import ChatMessage
from ..transcripts import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    InfoEvent,
    LimitEvent,
    LoggerEvent,
    ModelEvent,
    SandboxEvent,
    SpanBegin,
    SpanEnd,
    SubtaskEvent,
    ToolEvent,
)
from . import _attributes as a
from ._common import (
    MAX_NS,
    Options,
    before_ns,
    chat_request,
    chat_result,
    cleaned,
    end_ns,
    error_kind,
    note,
    ns,
    put,
    sandbox_attributes,
    set_error,
    text,
)
from ._inputs import InputIndex, ModelInput

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["Options", "TraceBuilder", "ns"]

SETTLE_NS = 1_000_000_000
"""How long after a recorded call's end an event may still be within it: a call's end is
its start plus its duration, two clocks, which drift apart a little during a call."""


class TraceBuilder:
    """The spans of one transcript (not thread-safe: its transcript calls it locked)."""

    def __init__(
        self,
        tracer: Tracer,
        root: Span,
        options: Options,
        model_input: ModelInput | None = None,
        *,
        live: bool = True,
        message: Callable[[str], ChatMessage | None] | None = None,
    ) -> None:
        self.tracer = tracer
        self.live = live
        self.root = root
        self.options = options
        self.model_input = model_input
        self.message = message  # a message by id: a call's input read newest first
        self._inputs = InputIndex()
        self.status = "success"
        self.named = False
        self._root_context = trace.set_span_in_context(root)
        self._spans: dict[str, Span] = {}  # event id -> its span (kept: parents)
        self._contexts: dict[str, Context] = {}
        self._pending: set[str] = set()
        self._done: set[str] = set()  # ids of the spans ended and let go of (live)
        self._ending: list[tuple[int, str]] = []  # a recorded run's calls over: (end, id)
        self.last = 0  # a recorded run: the latest time of what it did (nanoseconds)
        self._read = 0  # a recorded run: the latest start of the events read (_settle)
        self._agents: set[str | None] = {None}  # scopes whose model calls make steps
        self._steps: dict[str | None, Span] = {}  # scope -> its open step
        self._step_count: dict[str | None, int] = {}
        self._input_tokens = 0
        self._json: dict[str, str] = {}  # message id -> its JSON (contents)
        self._output_tokens = 0

    # --- what the root is ----------------------------------------------------------------
    def name_run(self, name: str, model: str | None) -> None:
        """The root is the run ``name`` (an agent's run, unless :meth:`name_eval`)."""
        self.named = True
        root = self.root
        root.update_name(text(f"invoke_agent {a.label(name)}"))
        put(root, a.AGENT_NAME, name)
        if model:
            provider, model_name = a.split_model(model)
            put(root, a.PROVIDER, provider)
            put(root, a.REQUEST_MODEL, model_name)

    def name_eval(self, name: str) -> None:
        """The root is an eval (its samples' spans are within it)."""
        if self.root.is_recording():
            self.root.update_name(text(f"invoke_workflow {a.label(name)}"))
            self.root.set_attribute(a.OPERATION, "invoke_workflow")

    def name_sample(self, name: str, id: str | None = None, epoch: int | None = None) -> None:
        """The root is a sample of the eval ``name``."""
        self.named = True
        root = self.root
        sample = f" sample {a.label(id)}" if id is not None else ""
        root.update_name(text(f"invoke_agent {a.label(name)}{sample}"))
        put(root, a.AGENT_NAME, name)
        root.set_attribute("loopwright.eval.sample", True)
        if id is not None:
            put(root, a.SAMPLE_ID, id)
        if epoch is not None:
            put(root, "loopwright.eval.epoch", epoch)

    def context_at(self, scope: str | None) -> Context:
        """Where a span opened now in ``scope`` belongs (e.g. an eval's sample)."""
        return self._parent(scope)

    # --- where an event goes -------------------------------------------------------------
    def _context(self, scope: str | None) -> Context:
        """The context of a scope's own span (the root for ``None``)."""
        if scope is None:
            return self._root_context
        context = self._contexts.get(scope)
        if context is None:
            span = self._spans.get(scope)
            if span is None:  # a scope this builder never saw: under the root
                return self._root_context
            context = self._contexts[scope] = trace.set_span_in_context(span)
        return context

    def _parent(self, scope: str | None) -> Context:
        """Where a new span in ``scope`` goes: its open step, else the scope's span."""
        step = self._steps.get(scope)
        if step is not None:
            return trace.set_span_in_context(step)
        return self._context(scope)

    def _current(self, scope: str | None) -> Span:
        step = self._steps.get(scope)
        if step is not None:
            return step
        if scope is None:
            return self.root
        return self._spans.get(scope, self.root)

    def _owner(self, scope: str | None) -> Span:
        """The span of the scope itself (not its step)."""
        return self.root if scope is None else self._spans.get(scope, self.root)

    def _new_step(self, scope: str | None, start: int) -> Context:
        self._end_step(scope, start)
        n = self._step_count.get(scope, 0) + 1
        self._step_count[scope] = n
        step = self.tracer.start_span(
            f"step {n}",
            context=self._context(scope),
            start_time=start,
            attributes={"loopwright.step": n},
        )
        self._steps[scope] = step
        return trace.set_span_in_context(step)

    def _end_step(self, scope: str | None, end: int) -> None:
        step = self._steps.pop(scope, None)
        if step is not None:
            step.end(end_time=end)

    def _start(
        self,
        ev: Event,
        name: str,
        attributes: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        context: Context | None = None,
    ) -> Span:
        span = self.tracer.start_span(
            text(name),
            context=context if context is not None else self._parent(ev.span_id),
            kind=kind,
            start_time=ns(ev.timestamp),
            attributes=cleaned(attributes),
        )
        self._spans[ev.id] = span
        self._pending.add(ev.id)
        return span

    def _end(self, ev: ModelEvent | ToolEvent | SubtaskEvent) -> int:
        """When a completed event ended: now, when it is told as it completes (its
        start and duration come from two clocks), else its start plus its duration."""
        if self.live:
            return time.time_ns()
        return end_ns(ev.timestamp, ev.duration)

    def _finish(self, id: str, end: int) -> Span | None:
        """The span of a completed event, to finish (``None``: nothing to do)."""
        if id not in self._pending:
            return None
        self._pending.discard(id)
        if not self.live:  # a recorded run: the events within it come after it (_settle)
            return self._spans[id]
        self._end_step(id, end)  # steps of an agent that ran within it
        self._done.add(id)  # (a second notice of its end is not a new event)
        return self._release(id)

    def _release(self, id: str) -> Span:
        """Let go of the span of an event over: nothing more happens within it, so what
        a long run keeps is what is open, not every span it made."""
        self._contexts.pop(id, None)
        self._step_count.pop(id, None)
        self._agents.discard(id)
        return self._spans.pop(id)

    def _over(self, id: str, span: Span, end: int) -> None:
        """End the span of a completed event at ``end``: now, when it is told as it
        happens; in a recorded run once the events within it are read (:meth:`_settle`)."""
        if self.live:
            span.end(end_time=end)
        else:
            heapq.heappush(self._ending, (end, id))
            self.last = max(self.last, end)

    def _settle(self, now: int) -> None:
        """A recorded run's events are read in the order they began, and the events
        within a call began before it ended: so the calls that ended before ``now`` (the
        latest start read, not end, less :data:`SETTLE_NS`) have all theirs, and end."""
        ending = self._ending
        while ending and ending[0][0] < now:
            end, id = heapq.heappop(ending)
            self._end_step(id, end)  # (its agent's last step)
            self._release(id).end(end_time=end)

    # --- events ---------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        """An event recorded, or a pending event completed."""
        if ev.id in self._done:
            return
        if not self.live:  # (not by self.last: a long call's end, read, is not reached)
            began = ns(ev.timestamp)
            self.last, self._read = max(self.last, began), max(self._read, began)
            self._settle(self._read - SETTLE_NS)
        if isinstance(ev, ModelEvent):
            self._model(ev)
        elif isinstance(ev, ToolEvent):
            self._tool(ev)
        elif isinstance(ev, SpanBegin):
            self._span_begin(ev)
        elif isinstance(ev, SpanEnd):
            self._span_end(ev)
        elif isinstance(ev, SubtaskEvent):
            self._subtask(ev)
        elif isinstance(ev, LimitEvent):
            self._limit(ev)
        elif isinstance(ev, ErrorEvent):
            self._run_error(ev)
        elif isinstance(ev, (InfoEvent, LoggerEvent, ApprovalEvent)):
            self._note(ev)
        elif isinstance(ev, SandboxEvent):
            self._sandbox(ev)

    def _model(self, ev: ModelEvent) -> None:
        if ev.id not in self._spans:
            start = ns(ev.timestamp)
            context = self._new_step(ev.span_id, start) if ev.span_id in self._agents else None
            name, attributes = chat_request(ev)
            if self.options.contents:
                self._inputs.add(ev)
            self._start(ev, name, attributes, kind=SpanKind.CLIENT, context=context)
        if ev.pending:
            return
        end = self._end(ev)
        span = self._finish(ev.id, end)
        if span is None:
            return
        out = ev.output
        chat_result(span, ev)
        if ev.usage is not None:
            self._input_tokens += ev.usage.input_tokens
            self._output_tokens += ev.usage.output_tokens
        if self.options.contents:
            limit = self.options.max_content
            if self.model_input is not None:
                inputs, omitted = self._inputs.shown(
                    ev, self.message, self.model_input, limit, self._json
                )
                put(span, a.INPUT_MESSAGES, inputs)
                if omitted:
                    put(span, "loopwright.input.messages_omitted", omitted)
            if out is not None:
                put(span, a.OUTPUT_MESSAGES, a.output_messages(out, limit))
        self._over(ev.id, span, end)

    def _tool(self, ev: ToolEvent) -> None:
        if ev.id not in self._spans:
            name = ev.call.function  # the model's choice: maybe no tool's name
            attributes: dict[str, Any] = {
                a.OPERATION: "execute_tool",
                a.TOOL_NAME: name,  # (labelled: _start, a.LABELS)
                a.TOOL_CALL_ID: ev.call.id,
                a.TOOL_TYPE: "function",
            }
            if self.options.contents:
                attributes[a.TOOL_ARGUMENTS] = a.json_value(
                    ev.call.arguments, self.options.max_content
                )
            self._start(ev, f"execute_tool {a.label(name)}", attributes)
            self._agents.add(ev.id)  # an agent used as a tool runs its steps in the call
        if ev.pending:
            return
        end = self._end(ev)
        span = self._finish(ev.id, end)
        if span is None:
            return
        if ev.approval is not None:
            put(span, "loopwright.approval.decision", ev.approval.decision)
        if ev.truncated:
            put(span, "loopwright.tool.truncated", True)
        if ev.failure is not None:
            kind, message = error_kind(ev.failure)
            set_error(span, kind, message, ev.traceback)
        elif ev.error is not None:
            set_error(span, ev.error.type, ev.error.message)
        if self.options.contents and ev.result is not None:
            put(span, a.TOOL_RESULT, a.bounded(ev.result.text, self.options.max_content))
        self._over(ev.id, span, end)

    def _span_begin(self, ev: SpanBegin) -> None:
        if ev.id in self._spans:
            return
        if ev.type == "run":  # a run inside a run (an agent used as a tool)
            self._agents.add(ev.id)
            attributes = {a.OPERATION: "invoke_agent", a.AGENT_NAME: ev.name}
            self._start(ev, f"invoke_agent {a.label(ev.name)}", attributes)
        else:
            attributes = {"loopwright.span.type": ev.type} if ev.type else {}
            self._start(ev, a.label(ev.name), attributes)

    def _span_end(self, ev: SpanEnd) -> None:
        end = ns(ev.timestamp)
        span = self._finish(ev.begin, end)
        if span is None:
            return
        if ev.error is not None:
            kind, message = error_kind(ev.error)
            set_error(span, kind, message)
        self._over(ev.begin, span, end)

    def _subtask(self, ev: SubtaskEvent) -> None:
        if ev.id not in self._spans:
            self._agents.add(ev.id)
            attributes: dict[str, Any] = {"loopwright.subtask.type": ev.type}
            if self.options.contents:
                attributes["loopwright.subtask.input"] = a.json_value(
                    ev.input, self.options.max_content
                )
            self._start(ev, f"{a.label(ev.type)} {a.label(ev.name)}", attributes)
        if ev.pending:
            return
        end = self._end(ev)
        span = self._finish(ev.id, end)
        if span is None:
            return
        if ev.error is not None:
            kind, message = error_kind(ev.error)
            set_error(span, kind, message)
        elif self.options.contents:
            put(
                span, "loopwright.subtask.result", a.json_value(ev.result, self.options.max_content)
            )
        self._over(ev.id, span, end)

    def _limit(self, ev: LimitEvent) -> None:
        self._note(ev)
        put(self._owner(ev.span_id), "loopwright.limit.type", ev.type)
        if ev.span_id is None:
            self.status = "limit"

    def _run_error(self, ev: ErrorEvent) -> None:
        set_error(self._owner(ev.span_id), ev.error, ev.message, ev.traceback)
        if ev.span_id is None:
            cancelled = ev.error in ("CancelledError", "KeyboardInterrupt")
            self.status = "cancelled" if cancelled else "error"

    def _note(self, ev: InfoEvent | LoggerEvent | ApprovalEvent | LimitEvent) -> None:
        name, attributes = note(ev, self.options.contents, self.options.max_content)
        self._current(ev.span_id).add_event(name, cleaned(attributes), ns(ev.timestamp))

    def _sandbox(self, ev: SandboxEvent) -> None:
        end = ns(ev.timestamp)  # recorded when the operation ended
        attributes = sandbox_attributes(ev, self.options)
        span = self.tracer.start_span(
            text(f"sandbox {ev.action}"),
            context=self._parent(ev.span_id),
            start_time=before_ns(end, ev.duration),
            attributes=cleaned(attributes),
        )
        span.end(end_time=end)

    # --- the end --------------------------------------------------------------------------
    def close(self, end: int | None = None) -> None:
        """End what is still open and the root span (at ``end``, default now)."""
        self._settle(MAX_NS + 1)
        for scope in list(self._steps):
            if end is None:
                self._steps.pop(scope).end()
            else:
                self._end_step(scope, end)
        for id in list(self._pending):  # a run killed (or cut) with calls in flight
            span = self._spans[id]
            put(span, "loopwright.unfinished", True)
            span.end(end_time=end)
        self._pending.clear()
        root = self.root
        if self._input_tokens or self._output_tokens:
            put(root, a.INPUT_TOKENS, self._input_tokens)
            put(root, a.OUTPUT_TOKENS, self._output_tokens)
        root.set_attribute("loopwright.run.status", self.status)
        root.end(end_time=end)
        self._spans.clear()
        self._contexts.clear()
        self._json.clear()
        self._inputs.clear()
        self._done.clear()
