from collections.abc import Iterator

import pytest

from .wire_server import WireServer


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A fresh scriptable OpenAI/Anthropic-speaking server on 127.0.0.1."""
    with WireServer() as server:
        yield server
