"""``strict_schema``: the form OpenAI's strict function calling accepts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import loopwright as lw
from loopwright.tools import StrictSchemaError
from loopwright.tools._jsonschema import allows_null, drop_nulls

from . import corpus

ALLOWED = {
    "type", "description", "properties", "required", "additionalProperties", "items", "enum",
    "const", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip


def check_strict(node: Any, path: str = "") -> None:
    """What OpenAI checks: every object closed and fully required; known keywords only."""
    if isinstance(node, list):
        for i, v in enumerate(node):
            check_strict(v, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    assert set(node) <= ALLOWED, f"{path}: {set(node) - ALLOWED}"
    if node.get("type") == "object" or "properties" in node:
        assert node["additionalProperties"] is False, path
        assert node["required"] == list(node["properties"]), path
    for key in ("properties", "$defs"):
        for name, sub in node.get(key, {}).items():
            check_strict(sub, f"{path}.{name}")
    for key in ("items", "anyOf"):
        if key in node:
            check_strict(node[key], f"{path}.{key}")


def test_a_google_docstring_function_gives_a_strict_schema() -> None:
    @lw.tool
    def search_flights(
        origin: str, destination: str, max_stops: int = 1, cabin: str | None = None
    ) -> list[str]:
        """Search flights between two airports.

        Args:
            origin: IATA code of the departure airport.
            destination: IATA code of the arrival airport.
            max_stops: The most stops allowed.
            cabin: Cabin class, if it matters.
        """
        return []

    strict = lw.strict_schema(search_flights.info.parameters)
    assert strict == {
        "type": "object",
        "properties": {
            "origin": {"type": "string", "description": "IATA code of the departure airport."},
            "destination": {
                "type": "string",
                "description": "IATA code of the arrival airport.",
            },
            "max_stops": {"type": ["integer", "null"], "description": "The most stops allowed."},
            "cabin": {
                "description": "Cabin class, if it matters.",
                "anyOf": [{"type": "string"}, {"type": "null"}],
            },
        },
        "required": ["origin", "destination", "max_stops", "cabin"],
        "additionalProperties": False,
    }
    check_strict(strict)
    # what a strict model sends for "use the default" is understood
    assert search_flights.validate(
        {"origin": "OSL", "destination": "LHR", "max_stops": None, "cabin": None}
    ) == {"origin": "OSL", "destination": "LHR", "max_stops": 1, "cabin": None}


@pytest.mark.parametrize(
    "fn",
    [
        corpus.no_params,
        corpus.scalars,
        corpus.defaults,
        corpus.optionals,
        corpus.literals,
        corpus.enums,
        corpus.times,
        corpus.models,
        corpus.optional_model,
        corpus.annotated,
        corpus.field_defaults,
        corpus.kinds,
        corpus.google_style,
    ],
    ids=lambda fn: fn.__name__,
)
def test_corpus_schemas_become_strict_and_strict_nulls_validate(fn: Any) -> None:
    t = lw.tool(fn)
    before = copy.deepcopy(t.info.parameters)
    strict = lw.strict_schema(t.info.parameters)
    assert t.info.parameters == before  # the input is not modified
    check_strict(strict)
    # a null for an optional parameter that does not accept None means "the default"
    required = set(before["required"])
    optional = [p for p in before["properties"] if p not in required]
    kept = drop_nulls(dict.fromkeys(optional), before)
    for name in optional:
        assert (name in kept) == allows_null(before["properties"][name], before), name
    if not required:
        assert t.validate(dict.fromkeys(optional)) == t.validate({})


def test_nested_optional_fields_become_nullable_and_accept_null() -> None:
    t = lw.tool(corpus.models)
    strict = lw.strict_schema(t.info.parameters)
    assert strict["properties"]["point"]["properties"]["y"] == {
        "type": ["number", "null"],
        "description": "The vertical coordinate.",
    }
    # the recursive definition stays, made strict too
    assert strict["$defs"]["Tree"]["required"] == ["value", "children"]
    args = {
        "point": {"x": 1, "y": None},
        "tree": {"value": 1, "children": None},
        "options": {"verbose": True, "tags": None},
        "person": {"name": "A", "age": None, "home": {"x": 0, "y": None}},
    }
    values = t.validate(args)
    assert values["point"] == corpus.Point(x=1, y=0.0)
    assert values["tree"] == corpus.Tree(value=1, children=[])
    assert values["options"] == corpus.Options(verbose=True, tags=[])
    assert values["person"] == {"name": "A", "home": corpus.Point(x=0, y=0.0)}


def test_rewrites() -> None:
    schema = {
        "type": "object",
        "title": "Args",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
            "same": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]},
            "one": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "merged": {"allOf": [{"type": "string", "minLength": 2}], "description": "M."},
            "fmt": {"type": "string", "format": "binary", "examples": ["x"]},
            "ok_fmt": {"type": "string", "format": "email", "pattern": "@"},
            "ref": {"$ref": "#/$defs/Item", "description": "The item."},
            "bare_ref": {"$ref": "#/$defs/Item"},
            "set": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
        "required": ["pair", "same", "one", "merged", "fmt", "ok_fmt", "ref", "bare_ref", "set"],
        "$defs": {
            "Item": {
                "type": "object",
                "title": "Item",
                "properties": {"id": {"type": "integer", "default": 0}},
            }
        },
    }
    item = {
        "type": "object",
        "properties": {"id": {"type": ["integer", "null"]}},
        "required": ["id"],
        "additionalProperties": False,
    }
    strict = lw.strict_schema(schema)
    assert strict["properties"] == {
        "pair": {
            "type": "array",
            "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "minItems": 2,
            "maxItems": 2,
        },
        "same": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        "one": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        "merged": {"type": "string", "description": "M."},
        "fmt": {"type": "string"},
        "ok_fmt": {"type": "string", "format": "email", "pattern": "@"},
        "ref": {**item, "description": "The item."},
        "bare_ref": {"$ref": "#/$defs/Item"},
        "set": {"type": "array", "items": {"type": "string"}},
    }
    assert strict["$defs"] == {"Item": item}
    check_strict(strict)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {
                "type": "object",
                "properties": {
                    "m": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
            },
            "parameters.m: a mapping with free-form keys (dict)",
        ),
        ({"type": "object", "properties": {"x": {}}}, "parameters.x: a value of any type"),
        (
            {"type": "object", "properties": {"l": {"type": "array", "items": {}}}},
            "parameters.l.items: a list of values of any type",
        ),
        (
            {"type": "object", "properties": {"o": {"type": "object"}}},
            "parameters.o: an object without properties",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}},
            },
            "parameters.a: an allOf of several schemas",
        ),
        ({"type": "string"}, 'must have "type": "object" at the top'),
    ],
)
def test_what_strict_mode_cannot_express_is_a_clear_error(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(StrictSchemaError) as info:
        lw.strict_schema(schema)
    assert message in str(info.value)
    assert isinstance(info.value, lw.ConfigurationError)


def test_dict_and_any_parameters_from_functions_are_reported() -> None:
    with pytest.raises(StrictSchemaError, match=r"parameters\.e: a mapping"):
        lw.strict_schema(lw.tool(corpus.containers).info.parameters)
    with pytest.raises(StrictSchemaError, match=r"parameters\.x: a value of any type"):
        lw.strict_schema(lw.tool(corpus.anything).info.parameters)


def test_a_tool_or_its_info_is_accepted() -> None:
    @lw.tool
    def search(query: str, limit: int = 10) -> str:
        """Search."""
        return query

    expected = lw.strict_schema(search.info.parameters)
    assert lw.strict_schema(search) == expected
    assert lw.strict_schema(search.info) == expected
    assert expected["required"] == ["query", "limit"]
    check_strict(expected)
    with pytest.raises(StrictSchemaError, match="a Tool or a ToolInfo, got function"):
        lw.strict_schema(search.fn)  # type: ignore[arg-type]


async def test_a_strict_models_nulls_reach_the_function_as_its_defaults() -> None:
    @lw.tool
    def search(query: str, limit: int = 10, lang: str = "en") -> str:
        """Search."""
        return f"{query} {limit} {lang}"

    # the model saw the strict schema (every property required, the optional ones
    # nullable) and sends null for what it leaves out
    strict = lw.strict_schema(search)
    nulls = {"query": "q", "limit": None, "lang": None}
    from_strict = lw.Tool.from_info(lw.ToolInfo(name="search", parameters=strict), search.fn)
    for t in (search, from_strict):
        assert await t.run(nulls) == "q 10 en", t
        assert await t.run({"query": "q", "limit": 3.0, "lang": None}) == "q 3 en", t
