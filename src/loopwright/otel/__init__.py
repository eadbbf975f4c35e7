"""OpenTelemetry traces of runs, following the GenAI semantic conventions.

    import loopwright.otel

    loopwright.otel.instrument()  # every run from now on, to the global tracer provider

Needs the ``otel`` extra (``pip install 'loopwright[otel]'``). The command line traces
its runs with ``LOOPWRIGHT_OTEL=1`` (OTLP over HTTP, configured by the standard
``OTEL_EXPORTER_OTLP_*`` variables); ``loopwright runs export RUN --format otlp`` sends a
run recorded earlier (:func:`export_spans`). See :func:`instrument` for the spans.
"""

from typing import TYPE_CHECKING

from ._cli import EXIT_ENV, cli_tracing
from ._instrument import ENV, Instrumentation, instrument

if TYPE_CHECKING:
    from ._export import export_spans

__all__ = ["ENV", "EXIT_ENV", "Instrumentation", "cli_tracing", "export_spans", "instrument"]


def __getattr__(name: str) -> object:
    if name == "export_spans":  # needs OpenTelemetry itself: imported when asked for
        from ._instrument import _import

        _import()
        from ._export import export_spans

        return export_spans
    raise AttributeError(f"module 'loopwright.otel' has no attribute {name!r}")
