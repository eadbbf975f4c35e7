"""A schema from elsewhere (an MCP server's, a user's schema tool) may name a URL in a
reference: checking a call's arguments against it never opens that URL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import loopwright as lw
from loopwright.tools._schema_spec import SchemaSpec
from tests._schema_server import schema_server


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    with schema_server() as served:
        yield served


@pytest.mark.parametrize("key", ["$dynamicRef", "$recursiveRef"])
def test_a_reference_to_a_url_is_never_fetched(server: tuple[str, list[str]], key: str) -> None:
    url, asked = server
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {key: url + "#x"}}}
    if key == "$recursiveRef":
        schema["$schema"] = "https://json-schema.org/draft/2019-09/schema"
    spec = SchemaSpec(lambda a=None: a, "t", schema)
    try:
        spec.bind("t", {"a": "not an integer"})
    except lw.ToolArgumentsError:
        pass  # (what it cannot check is an error for the model)
    assert asked == []


def test_local_references_still_check(server: tuple[str, list[str]]) -> None:
    _, asked = server
    schema = {
        "$defs": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}},
    }
    spec = SchemaSpec(lambda a=None: a, "t", schema)
    assert spec.bind("t", {"a": 3}) == ([], {"a": 3})
    with pytest.raises(lw.ToolArgumentsError, match="integer"):
        spec.bind("t", {"a": "x"})
    assert asked == []
