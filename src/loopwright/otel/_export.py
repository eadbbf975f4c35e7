"""Spans of a run already in the run store (made before tracing was switched on)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING

from .._errors import ConfigurationError
from ..log import RunLog, SampleInfo, load_run
from . import _attributes as a
from ._builder import Options, TraceBuilder, ns
from ._common import put
from ._instrument import tracer

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = ["BATCH", "export_spans", "send_otlp"]


def export_spans(
    run: str | os.PathLike[str] | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    tracer_provider: TracerProvider | None = None,
    contents: bool = False,
    max_content: int = 16_000,
) -> str:
    """Send a recorded run (default: the latest) to OpenTelemetry as the spans that live
    tracing (:func:`instrument`) makes, with the recorded times; an eval's samples are
    spans within the eval's span. Returns the trace id (32 hex digits).

    The spans go to ``tracer_provider`` (default: the global one): flush it (or shut it
    down) to send them. ``contents`` and ``max_content`` as for :func:`instrument`.
    """
    options = Options(contents=contents, max_content=max_content)
    t = tracer(tracer_provider)
    with load_run(run, db=db) as log:
        info = log.info
        name = info.name or "run"
        samples = log.samples
        root = _build(t, log, None, options, info.created, None)
        if samples:
            root.name_eval(name)
        else:
            root.name_run(name, info.model)
        put(root.root, a.RUN_ID, info.id)
        for sample in samples:
            built = _build(t, log, sample, options, sample.created, root.context_at(None))
            built.name_sample(name, sample.id, sample.epoch)
            put(built.root, a.RUN_ID, info.id)
            _end(built, sample.status, sample.finished, sample.created)
            root.last = max(root.last, built.last, ns(sample.finished or sample.created))
        _end(root, info.status, info.finished, info.created)
        return format(root.root.get_span_context().trace_id, "032x")


def _build(
    t: Tracer,
    log: RunLog,
    sample: SampleInfo | None,
    options: Options,
    start: datetime,
    parent: Context | None,
) -> TraceBuilder:
    root = t.start_span(
        "invoke_agent",
        context=parent,
        start_time=ns(start),
        attributes={a.OPERATION: "invoke_agent"},
    )
    builder = TraceBuilder(t, root, options, log.model_input, live=False, message=log.message)
    builder.named = True
    for ev in log.events(sample if sample is not None else None):
        builder.on_event(ev)
    return builder


def _end(builder: TraceBuilder, status: str, finished: datetime | None, start: datetime) -> None:
    """Close with the recorded status (``interrupted``: a run whose process died) and
    end (none: still going, or killed; then when the last thing it did ended)."""
    if builder.status == "success" and status != "success":
        builder.status = status
    builder.close(ns(finished) if finished is not None else max(ns(start), builder.last))


BATCH = 512
"""The most spans ``send_otlp`` sends a request (the SDK batch processor's default):
collectors refuse requests over a few megabytes, and a long run's spans need not all be
held at once."""


def send_otlp(
    run: str | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    contents: bool = False,
    timeout: float = 10.0,
) -> tuple[str, int]:
    """Send a recorded run's spans over OTLP/HTTP to ``endpoint`` (the traces URL;
    default: the standard ``OTEL_EXPORTER_OTLP_*`` variables, else
    ``http://localhost:4318/v1/traces``), :data:`BATCH` spans a request, as they end.
    Each request (its retries included) takes at most ``timeout`` seconds, and nothing
    more is sent after one failed: an endpoint that is down costs about ``timeout``.
    Returns the trace id and the number of spans.

    Raises:
        ConnectionError: The endpoint did not take the spans; the message names it by
            scheme, host and port only, and says why (the error's type or HTTP status).
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    from ._exit import endpoint_from_env, quiet_exporter, where

    class Batches(SpanProcessor):
        """Sends the spans ended, a batch at a time, on this thread."""

        def __init__(self) -> None:
            self.spans: list[ReadableSpan] = []
            self.sent = 0
            self.failed = False

        def on_end(self, span: ReadableSpan) -> None:
            if not self.failed:
                self.spans.append(span)
                if len(self.spans) >= BATCH:
                    self.send()

        def send(self) -> None:
            spans, self.spans = self.spans, []
            if spans and not self.failed:
                self.failed = exporter.export(spans) is not SpanExportResult.SUCCESS
                self.sent += 0 if self.failed else len(spans)

    if not timeout > 0:
        raise ConfigurationError(f"send_otlp: timeout must be > 0 seconds, not {timeout!r}")
    service = os.environ.get("OTEL_SERVICE_NAME", "loopwright")
    provider = TracerProvider(
        resource=Resource.create({"service.name": service}), shutdown_on_exit=False
    )
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    batches = Batches()
    provider.add_span_processor(batches)
    with quiet_exporter() as failure:
        try:
            trace_id = export_spans(run, db=db, tracer_provider=provider, contents=contents)
            batches.send()
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]
    if batches.failed:
        why = f" ({failure.reason})" if failure.reason else ""
        raise ConnectionError(
            f"{where(endpoint or endpoint_from_env())} did not take the spans{why} within "
            f"{timeout:g} s; {batches.sent} sent before"
        )
    return trace_id, batches.sent
