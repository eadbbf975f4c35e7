"""Tool schemas over a corpus of signatures and docstring styles, against exact JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import loopwright as lw

from . import corpus

POINT = {
    "type": "object",
    "description": "A point on the plane.",
    "properties": {
        "x": {"type": "number"},
        "y": {"type": "number", "description": "The vertical coordinate.", "default": 0.0},
    },
    "required": ["x"],
    "additionalProperties": False,
}


def obj(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


LISTING = obj(
    {
        "path": {"type": "string", "description": "The directory to list."},
        "depth": {"type": "integer", "description": "How deep to go.", "default": 1},
    },
    ["path"],
)

CASES: list[tuple[Callable[..., Any], str, dict[str, Any]]] = [
    (corpus.no_params, "Say hello.", obj({}, [])),
    (corpus.no_docstring, "", obj({"a": {"type": "integer"}}, ["a"])),
    (
        corpus.scalars,
        "Scalars.",
        obj(
            {
                "s": {"type": "string", "description": "A string."},
                "i": {"type": "integer", "description": "An integer."},
                "f": {"type": "number", "description": "A float."},
                "b": {"type": "boolean", "description": "A flag."},
            },
            ["s", "i", "f", "b"],
        ),
    ),
    (
        corpus.defaults,
        "Defaults.",
        obj(
            {
                "n": {"type": "integer", "default": 5},
                "name": {"type": "string", "default": "x"},
                "flag": {"type": "boolean", "default": False},
                "ratio": {"type": "number", "default": 0.5},
            },
            [],
        ),
    ),
    (
        corpus.optionals,
        "Optionals and unions.",
        obj(
            {
                "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "c": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1},
            },
            ["a"],
        ),
    ),
    (
        corpus.containers,
        "Containers.",
        obj(
            {
                "a": {"type": "array", "items": {"type": "integer"}},
                "b": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "string"}],
                    "maxItems": 2,
                    "minItems": 2,
                },
                "c": {"type": "array", "items": {"type": "integer"}},
                "d": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "e": {"type": "object", "additionalProperties": {"type": "integer"}},
                "f": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                "g": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "uniqueItems": True,
                    "default": [],
                },
            },
            ["a", "b", "c", "d", "e", "f"],
        ),
    ),
    (
        corpus.literals,
        "Literals.",
        obj(
            {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
            },
            ["mode"],
        ),
    ),
    (
        corpus.enums,
        "Enums.",
        obj(
            {
                "color": {"type": "string", "enum": ["red", "green"]},
                "level": {"type": "integer", "enum": [1, 2], "default": 1},
            },
            ["color"],
        ),
    ),
    (
        corpus.times,
        "Dates and times.",
        obj(
            {
                "when": {"type": "string", "format": "date-time"},
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "time"},
                "span": {"type": "string", "format": "duration"},
            },
            ["when", "day", "at", "span"],
        ),
    ),
    (
        corpus.models,
        "Structured parameters.",
        obj(
            {
                # the parameter's description replaces the model's docstring
                "point": {**POINT, "description": "Where."},
                # a recursive model stays a reference
                "tree": {"description": "A tree.", "$ref": "#/$defs/Tree"},
                "options": obj(
                    {
                        "verbose": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    ["verbose"],
                    description="How.",
                ),
                "person": obj(
                    {"name": {"type": "string"}, "age": {"type": "integer"}, "home": POINT},
                    ["name", "home"],
                    description="Who.",
                ),
            },
            ["point", "tree", "options", "person"],
            **{
                "$defs": {
                    "Tree": obj(
                        {
                            "value": {"type": "integer"},
                            "children": {
                                "type": "array",
                                "items": {"$ref": "#/$defs/Tree"},
                                "default": [],
                            },
                        },
                        ["value"],
                    )
                }
            },
        ),
    ),
    (
        corpus.optional_model,
        "The same model twice, once optional.",
        obj(
            {"start": POINT, "end": {"anyOf": [POINT, {"type": "null"}], "default": None}},
            ["start"],
        ),
    ),
    (
        corpus.annotated,
        "Annotated fields.",
        obj(
            {
                "count": {
                    "type": "integer",
                    "description": "How many (0-10).",
                    "maximum": 10,
                    "minimum": 0,
                },
                "word": {
                    "type": "string",
                    "description": "A word.",
                    "maxLength": 20,
                    "minLength": 1,
                    "default": "hi",
                },
            },
            ["count"],
        ),
    ),
    (
        corpus.field_defaults,
        "Field defaults.",
        obj(
            {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": "integer",
                    "description": "The most results.",
                    "exclusiveMinimum": 0,
                    "default": 10,
                },
                "tags": {"type": "array", "description": "Filters.", "items": {"type": "string"}},
            },
            ["query"],
        ),
    ),
    (
        corpus.var_args,
        "Star arguments are not part of the schema.",
        obj(
            {
                "first": {"type": "string", "description": "The first."},
                "last": {"type": "boolean", "description": "The last.", "default": True},
            },
            ["first"],
        ),
    ),
    (
        corpus.kinds,
        "Positional-only, normal and keyword-only parameters.",
        obj(
            {
                "a": {"type": "integer"},
                "b": {"type": "integer"},
                "c": {"type": "integer", "default": 3},
            },
            ["a", "b"],
        ),
    ),
    (corpus.untyped, "No annotations: any value.", obj({"a": {}, "b": {"default": 2}}, ["a"])),
    (corpus.anything, "Any and object.", obj({"x": {}, "y": {"default": None}}, ["x"])),
    (
        corpus.async_tool,
        "Fetch a page.",
        obj(
            {
                "url": {"type": "string", "description": "The address."},
                "retries": {"type": "integer", "description": "How often to retry.", "default": 3},
            },
            ["url"],
        ),
    ),
    (
        corpus.google_style,
        # wrapped lines are joined; Returns and Raises are not part of the description
        "List a directory.\n\nShows files and folders, one per line. The listing can be long.",
        obj(
            {
                "path": {
                    "type": "string",
                    "description": "The directory to list, relative to the working directory.",
                },
                "depth": {"type": "integer", "description": "How deep to go.", "default": 1},
            },
            ["path"],
        ),
    ),
    (corpus.numpy_style, "List a directory.\n\nShows files and folders, one per line.", LISTING),
    (corpus.rest_style, "List a directory.\n\nShows files and folders, one per line.", LISTING),
    (corpus.epydoc_style, "List a directory.\n\nShows files and folders, one per line.", LISTING),
]


@pytest.mark.parametrize(
    ("fn", "description", "parameters"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_schema_corpus(
    fn: Callable[..., Any], description: str, parameters: dict[str, Any]
) -> None:
    t = lw.tool(fn)
    assert t.name == fn.__name__
    assert t.info.description == description
    assert t.info.parameters == parameters


def test_key_order_is_readable() -> None:
    params = lw.tool(corpus.field_defaults).info.parameters
    assert list(params) == ["type", "properties", "required", "additionalProperties"]
    assert list(params["properties"]["limit"]) == [
        "type",
        "description",
        "exclusiveMinimum",
        "default",
    ]


def test_no_titles_anywhere() -> None:
    def titles(node: Any) -> int:
        if isinstance(node, dict):
            return ("title" in node) + sum(titles(v) for v in node.values())
        if isinstance(node, list):
            return sum(titles(v) for v in node)
        return 0

    for fn, _, _ in CASES:
        assert titles(lw.tool(fn).info.parameters) == 0, fn.__name__


def test_property_named_title_is_kept() -> None:
    def publish(title: str, body: str = "") -> None:
        """Publish a post."""

    params = lw.tool(publish).info.parameters
    assert list(params["properties"]) == ["title", "body"]


def test_default_value_that_is_a_dict_keeps_its_keys() -> None:
    def style(theme: dict[str, str] = {"title": "bold"}) -> None:  # noqa: B006
        """Style."""

    prop = lw.tool(style).info.parameters["properties"]["theme"]
    assert prop["default"] == {"title": "bold"}


def test_unserialisable_default_is_left_out_and_parameter_optional() -> None:
    sentinel = object()

    def f(x: int = sentinel) -> None:  # type: ignore[assignment]
        """F."""

    params = lw.tool(f).info.parameters
    assert params["properties"]["x"] == {"type": "integer"}
    assert params["required"] == []


def test_parameter_names_that_clash_with_pydantic_work() -> None:
    def weird(_x: int, model_config: str, json: bool = True, schema: int = 1) -> str:
        """Names pydantic would treat specially."""
        return f"{_x} {model_config} {json} {schema}"

    t = lw.tool(weird)
    assert list(t.info.parameters["properties"]) == ["_x", "model_config", "json", "schema"]
    assert t.validate({"_x": "3", "model_config": "m", "json": False}) == {
        "_x": 3,
        "model_config": "m",
        "json": False,
        "schema": 1,
    }


def test_explicit_description_wins_over_docstring() -> None:
    t = lw.tool(description="Custom.")(corpus.google_style)
    assert t.info.description == "Custom."
    assert t.info.parameters == lw.tool(corpus.google_style).info.parameters
