"""The OTLP/HTTP receiver on 127.0.0.1 the tests send spans to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.proto")

from ._receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()
