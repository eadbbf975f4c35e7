"""``instrument()``: trace every run of this process with OpenTelemetry, as it happens."""

from __future__ import annotations

import os
import weakref
from types import TracebackType
from typing import TYPE_CHECKING

from .._errors import ConfigurationError, MissingDependencyError
from ..transcripts import Transcript, on_transcript_open
from . import _attributes as a

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

    from ..transcripts import Event
    from ._builder import TraceBuilder

__all__ = ["ENV", "Instrumentation", "instrument", "tracer"]

ENV = "LOOPWRIGHT_OTEL"
"""The command line traces its runs when set: ``1`` / ``otlp`` (OTLP over HTTP, set up
by the standard ``OTEL_EXPORTER_OTLP_*`` variables) or ``console`` (spans as JSON on
stderr)."""

_active: Instrumentation | None = None


def _import() -> None:
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError as ex:
        raise MissingDependencyError(
            "tracing needs OpenTelemetry: pip install 'loopwright[otel]'"
        ) from ex


def tracer(tracer_provider: TracerProvider | None = None) -> Tracer:
    """loopwright's tracer, from ``tracer_provider`` (default: the global one)."""
    from opentelemetry import trace

    from .. import __version__

    return trace.get_tracer("loopwright", __version__, tracer_provider=tracer_provider)


def _contents(contents: bool | None) -> bool:
    if contents is not None:
        return contents
    return os.environ.get(a.CONTENTS_ENV, "").strip().lower() in ("1", "true", "yes")


def _root_of(t: Transcript) -> Transcript:
    while t.parent is not None:
        t = t.parent
    return t


class Instrumentation:
    """The tracing :func:`instrument` switched on; :meth:`uninstrument` (or leaving a
    ``with`` block) switches it off. Runs already going keep their spans to the end."""

    def __init__(self, tracer_provider: TracerProvider | None, contents: bool, max_content: int):
        from ._builder import Options

        self.tracer = tracer(tracer_provider)
        self.options = Options(contents=contents, max_content=max_content)
        self._builders: weakref.WeakKeyDictionary[Transcript, TraceBuilder] = (
            weakref.WeakKeyDictionary()
        )
        self._stop = on_transcript_open(self._open)

    def uninstrument(self) -> None:
        """Stop tracing the runs that start from now on."""
        global _active
        self._stop()
        if _active is self:
            _active = None

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.uninstrument()

    def _open(self, t: Transcript) -> None:
        from opentelemetry import context as otel_context

        from ..transcripts._current import _scope
        from ._builder import TraceBuilder

        scope = _scope.get()
        outer = self._builders.get(_root_of(scope.transcript)) if scope is not None else None
        parent = outer.context_at(scope.span_id) if outer is not None and scope else None
        root = self.tracer.start_span(
            "invoke_agent",
            context=parent if parent is not None else otel_context.get_current(),
            attributes={a.OPERATION: "invoke_agent"},
        )
        if not root.is_recording():
            # no tracer provider (or this trace sampled out): nothing more, per step nothing
            return
        builder = TraceBuilder(self.tracer, root, self.options, t.model_input, message=t.message)
        self._builders[t] = builder

        def on_event(ev: Event) -> None:
            if not builder.named:
                self._identify(t, builder)
            builder.on_event(ev)

        unsubscribe = t.subscribe(on_event)

        def close() -> None:
            unsubscribe()
            self._builders.pop(t, None)
            builder.close()

        t.on_close(close)

    def _identify(self, t: Transcript, builder: TraceBuilder) -> None:
        """Name the span of ``t`` after the run being recorded (at its first event: the
        run's recording is current by then, not yet when its transcript opens)."""
        from ..runtime import current_recording

        rec = current_recording()
        while rec is not None and rec.run is not None:  # a sample: name its run
            rec = rec.run
        if rec is None:
            builder.named = True
            return
        builder.root.set_attribute(a.RUN_ID, rec.run_id)
        name = rec.name or "run"
        run = self._builders.get(rec.transcript)
        if run is not None and not run.named:
            run.name_run(name, rec.model)
            run.root.set_attribute(a.RUN_ID, rec.run_id)
        if run is not builder:  # a sample of an eval
            if run is not None:
                run.name_eval(name)
            builder.name_sample(name)
        builder.named = True

    def __repr__(self) -> str:
        return f"Instrumentation(contents={self.options.contents})"


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    contents: bool | None = None,
    max_content: int = 16_000,
) -> Instrumentation:
    """Trace every run of this process with OpenTelemetry from now on, following the
    GenAI semantic conventions: an ``invoke_agent`` span per run (``loopwright.run.id``
    leads back to the run store), a span per agent step, ``chat`` spans for model calls,
    ``execute_tool`` spans for tool calls, spans for subtasks and ``span()`` blocks; an
    eval's samples are spans within the eval's. Spans go to ``tracer_provider`` (default:
    the global one, ``opentelemetry.trace.set_tracer_provider``); with none configured a
    run costs one span that records nothing, and its steps nothing.

    Calling it again replaces the earlier instrumentation.

    Args:
        tracer_provider: Where spans go (default: the global provider).
        contents: Record message contents, tool arguments and results, info data, log
            messages and sandbox commands: they may hold personal data, so the default
            is off (``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` turns it
            on). A model call's input then holds the newest messages that fit in
            ``max_content`` characters.
        max_content: The most characters of each content value (of a message's parts
            together: a reply's reasoning, text and tool calls).

    Raises:
        MissingDependencyError: OpenTelemetry is not installed (``loopwright[otel]``).
    """
    global _active
    _import()
    if not isinstance(max_content, int) or max_content < 100:
        raise ConfigurationError(
            f"instrument: max_content must be an int >= 100, not {max_content!r}"
        )
    if _active is not None:
        _active.uninstrument()
    _active = Instrumentation(tracer_provider, _contents(contents), max_content)
    return _active
