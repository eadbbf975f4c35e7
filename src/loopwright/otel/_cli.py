"""``cli_tracing()``: the command line's traces (``$LOOPWRIGHT_OTEL``), and an exit that
does not wait long on a collector that is down (``$LOOPWRIGHT_OTEL_EXIT_TIMEOUT``)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

from .._errors import ConfigurationError, MissingDependencyError
from ._instrument import ENV, _import, instrument

EXIT_ENV = "LOOPWRIGHT_OTEL_EXIT_TIMEOUT"
"""How many seconds a command waits at exit for the spans still to send (``0``: none)."""

__all__ = ["EXIT_ENV", "EXIT_TIMEOUT", "cli_tracing", "exit_timeout"]


EXIT_TIMEOUT = 2.0
"""The default of :data:`EXIT_ENV`: a collector that is up takes a batch well within it;
one that is down (refusing, or never answering) costs the command no more than this."""

_log = logging.getLogger("loopwright.otel")


def exit_timeout(value: str | None = None) -> float:
    """``$LOOPWRIGHT_OTEL_EXIT_TIMEOUT`` (or ``value``) in seconds.

    Raises:
        ConfigurationError: Not a number of seconds, at least 0.
    """
    text = (value if value is not None else os.environ.get(EXIT_ENV, "")).strip()
    if not text:
        return EXIT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 <= seconds <= 3600):
        raise ConfigurationError(f"${EXIT_ENV} must be seconds, 0 to 3600, not {text!r}")
    return seconds


@contextlib.contextmanager
def cli_tracing(value: str | None = None) -> Iterator[Any]:
    """For the command line: with ``$LOOPWRIGHT_OTEL`` set (or ``value``), trace its runs
    to the exporter it names (``1``/``otlp``: OTLP over HTTP; ``console``), and send
    what is left on leaving, waiting at most ``$LOOPWRIGHT_OTEL_EXIT_TIMEOUT`` seconds
    (default 2) for a collector: the spans not sent by then are lost, and a warning
    (one, without the endpoint's path, user or query) says how many."""
    value = (value if value is not None else os.environ.get(ENV, "")).strip().lower()
    if value in ("", "0", "false", "no"):
        yield None
        return
    if value not in ("1", "true", "yes", "otlp", "console"):
        raise ConfigurationError(f"${ENV} must be 1, otlp or console, not {value!r}")
    timeout = exit_timeout()
    _import()
    service = os.environ.get("OTEL_SERVICE_NAME", "loopwright")
    if value == "console":
        provider = _console(service)
        instrumentation = instrument(tracer_provider=provider)
        try:
            yield instrumentation
        finally:
            instrumentation.uninstrument()
            with contextlib.suppress(Exception):
                provider.shutdown()
        return
    try:
        from ._exit import SpanSender
    except ImportError as ex:
        raise MissingDependencyError(
            "tracing over OTLP needs the OpenTelemetry SDK and its OTLP/HTTP exporter: "
            "pip install 'loopwright[otel]'"
        ) from ex
    sender = SpanSender(service)
    instrumentation = instrument(tracer_provider=sender.provider)
    try:
        yield instrumentation
    finally:
        instrumentation.uninstrument()
        lost = sender.close(timeout)
        if lost is not None:
            _log.warning("%s", lost)


def _console(service: str) -> Any:
    """An SDK tracer provider printing spans as JSON on stderr (stdout is the command's
    answer)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    except ImportError as ex:
        raise MissingDependencyError(
            "tracing needs the OpenTelemetry SDK: pip install 'loopwright[otel]'"
        ) from ex
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    return provider
