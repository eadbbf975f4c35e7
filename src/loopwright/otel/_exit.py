"""Sending spans over OTLP/HTTP without hanging on a collector that is down.

The SDK's exporter retries a collector that refuses connections (backing off 1, 2, 4...
seconds) and waits for one that never answers, up to its timeout (10 s) a request; its
batch processor's ``shutdown`` waits for the last export whatever it takes. A command
whose work is done would wait that long to exit. :class:`SpanSender` gives the spans
still to send a bound at exit (:meth:`SpanSender.close`) and counts those that did not
go; :func:`quiet_exporter` keeps the exporter's log lines (one per retry, naming the
whole endpoint URL, which may hold a token) off stderr and remembers why it failed, so
the command says it once, secrets-free (:func:`where`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ._cli import EXIT_ENV

__all__ = ["ExportFailure", "SpanSender", "endpoint_from_env", "quiet_exporter", "where"]

# the loggers the exporter (and its retrying HTTP client) and the batch processor log to
_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.sdk._shared_internal",
)


def where(url: str | None) -> str:
    """An endpoint as a message may show it: scheme, host and port only (a URL's user,
    password, path and query may hold a secret)."""
    try:
        parts = urlsplit(url or "")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host:
        return "the OTLP endpoint"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme or 'http'}://{host}" + (f":{port}" if port else "")


def endpoint_from_env() -> str:
    """The traces endpoint the exporter uses when given none (the standard variables)."""
    env = os.environ
    return (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or "http://localhost:4318"
    )


class ExportFailure(logging.Filter):
    """Drops the exporter's log records, remembering the first failure's kind (the type
    of the error, or the HTTP status): never its text, which names the whole URL."""

    def __init__(self) -> None:
        super().__init__()
        self.reason: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.reason is None and record.levelno >= logging.WARNING:
            args = record.args if isinstance(record.args, tuple) else ()
            errors = [type(x).__name__ for x in args if isinstance(x, BaseException)]
            codes = [x for x in args if isinstance(x, int) and 100 <= x < 600]
            if errors:
                self.reason = errors[0]
            elif codes:
                self.reason = f"HTTP {codes[0]}"
        return False

    def attach(self) -> ExportFailure:
        for name in _LOGGERS:
            logging.getLogger(name).addFilter(self)
        return self

    def detach(self) -> None:
        for name in _LOGGERS:
            logging.getLogger(name).removeFilter(self)


@contextlib.contextmanager
def quiet_exporter() -> Iterator[ExportFailure]:
    """The exporter's log records dropped within (see :class:`ExportFailure`)."""
    failure = ExportFailure().attach()
    try:
        yield failure
    finally:
        failure.detach()


class _Counted(SpanExporter):
    """An exporter counting the spans it sent."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _Batches(BatchSpanProcessor):
    """The SDK's batch processor, counting the spans it was given."""

    ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            self.ended += 1
        super().on_end(span)


class SpanSender:
    """A tracer provider sending its spans over OTLP/HTTP in the background (the SDK's
    batch processor, configured by the standard ``OTEL_*`` variables), whose
    :meth:`close` waits a bounded time."""

    def __init__(self, service: str) -> None:
        # shutdown_on_exit=False: the SDK's own exit hook would wait unbounded
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service}), shutdown_on_exit=False
        )
        self._exporter = _Counted(OTLPSpanExporter())
        self._batches = _Batches(self._exporter)
        self.provider.add_span_processor(self._batches)
        self.failure = ExportFailure().attach()

    def close(self, timeout: float) -> str | None:
        """Send the spans left, waiting at most ``timeout`` seconds; then what was lost,
        as a warning (``None``: every span went). Spans still being sent after
        ``timeout`` are left to a daemon thread, which dies with the process."""
        done = threading.Thread(
            target=self.provider.shutdown, name="loopwright-otel-exit", daemon=True
        )
        done.start()
        done.join(timeout)
        ended, sent = self._batches.ended, self._exporter.sent
        finished = not done.is_alive()
        if finished:  # (else its late log records stay dropped too)
            self.failure.detach()
        if sent >= ended:
            return None
        reason = self.failure.reason
        why = "did not take them" + ("" if finished else f" within {timeout:g} s")
        why += f" ({reason})" if reason else ""
        return (
            f"OpenTelemetry: {ended - sent} of {ended} spans not sent, lost: the collector "
            f"at {where(endpoint_from_env())} {why}. `loopwright runs export RUN --format "
            f"otlp` sends a run again; ${EXIT_ENV} sets how long a command waits at exit"
        )
