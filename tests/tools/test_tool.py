"""``@tool``, ``Tool``, ``Tool.from_info`` and ``tool_with``: definition and validation."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import socket
import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import loopwright as lw
from loopwright.tools import ToolArgumentsError, ToolDefinitionError

from . import corpus


@lw.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


class Order(BaseModel):
    item: str
    quantity: int = 1


@dataclasses.dataclass
class Window:
    start: datetime.date
    days: int


class TypingTD(typing.TypedDict):
    a: int


# --- definition ---------------------------------------------------------------------


def test_tool_is_still_callable_like_the_function() -> None:
    assert multiply(6, 7) == 42
    assert multiply.fn(2, 3) == 6
    assert multiply.__name__ == "multiply"
    assert multiply.__doc__ is not None and multiply.__doc__.startswith("Multiply")
    assert multiply.__wrapped__ is multiply.fn
    assert isinstance(multiply, lw.Tool)
    assert (multiply.name, multiply.parallel, multiply.timeout, multiply.terminal) == (
        "multiply",
        False,
        None,
        False,
    )
    assert repr(multiply) == "Tool('multiply')"


def test_tool_with_options() -> None:
    @lw.tool(name="times", description="Times.", parallel=True, timeout=2.5, terminal=True)
    async def mul(a: int, b: int) -> int:
        return a * b

    assert (mul.name, mul.description, mul.parallel, mul.timeout, mul.terminal) == (
        "times",
        "Times.",
        True,
        2.5,
        True,
    )
    assert mul.is_async
    assert asyncio.run(mul(2, 4)) == 8
    assert repr(mul) == "Tool('times', parallel=True, timeout=2.5, terminal=True)"


def test_configurable_tool_is_a_factory() -> None:
    def make_search(corpus_: list[str], limit: int = 2) -> lw.Tool[[str], list[str]]:
        @lw.tool(parallel=True)
        def search(query: str) -> list[str]:
            """Search the corpus.

            Args:
                query: What to look for.
            """
            return [d for d in corpus_ if query in d][:limit]

        return search

    s = make_search(["apple pie", "apple tart", "apple juice", "pear"])
    assert asyncio.run(s.run({"query": "apple"})) == ["apple pie", "apple tart"]
    assert s.info.parameters["properties"]["query"]["description"] == "What to look for."


def test_models_tools_are_accepted_by_model_generate() -> None:
    model = lw.get_model("mock", outputs=["ok"])
    out = asyncio.run(model.generate([lw.UserMessage(content="hi")], tools=[multiply]))
    assert out.text == "ok"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: lw.tool(lambda x: x), "'<lambda>' is not a valid tool name"),
        (lambda: lw.tool(name="has space")(corpus.no_params), "'has space' is not a valid"),
        (lambda: lw.tool(name="x" * 65)(corpus.no_params), "1 to 64"),
        (lambda: lw.tool(timeout=0)(corpus.no_params), "timeout must be a positive"),
        (lambda: lw.tool(timeout=-1)(corpus.no_params), "timeout must be a positive"),
        (lambda: lw.tool(multiply), "already a tool; use tool_with"),
        (lambda: lw.tool("name"), "Use @tool(name='name')"),  # type: ignore[call-overload]
        (lambda: lw.Tool(42, name="x"), "needs a function"),  # type: ignore[arg-type]
    ],
)
def test_bad_definitions_are_clear_errors(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=None) as info:
        make()
    assert message in str(info.value)
    assert isinstance(info.value, lw.ConfigurationError)


def test_generator_functions_are_refused() -> None:
    def numbers(n: int) -> typing.Iterator[int]:
        yield from range(n)

    async def anumbers(n: int) -> typing.AsyncIterator[int]:
        yield n

    for fn in (numbers, anumbers):
        with pytest.raises(ToolDefinitionError, match="generator function"):
            lw.tool(fn)


def test_inexpressible_parameter_type_is_an_error_at_definition() -> None:
    def connect(host: str, sock: socket.socket) -> None:
        """Connect."""

    with pytest.raises(ToolDefinitionError) as info:
        lw.tool(connect)
    text = str(info.value)
    assert "Parameter 'sock' of tool 'connect'" in text
    assert "cannot be expressed as JSON schema" in text

    def apply(fn: Callable[[int], int]) -> None:
        """Apply."""

    with pytest.raises(ToolDefinitionError, match="Parameter 'fn' of tool 'apply'"):
        lw.tool(apply)


def test_typing_typeddict_error_says_what_to_use() -> None:
    def f(x: int, y: TypingTD) -> None:
        """F."""

    with pytest.raises(ToolDefinitionError, match=r"Parameter 'y'.*typing_extensions\.TypedDict"):
        lw.tool(f)


def test_unresolvable_type_hint_is_an_error() -> None:
    def f(x: Undefined) -> None:  # type: ignore[name-defined]  # noqa: F821
        """F."""

    with pytest.raises(ToolDefinitionError, match="Cannot resolve a type hint of tool 'f'"):
        lw.tool(f)


def test_an_alias_on_a_parameter_is_refused() -> None:
    from pydantic import Field

    def f(x: int = Field(1, alias="y")) -> None:
        """F."""

    with pytest.raises(ToolDefinitionError, match="Parameter 'x' of tool 'f' sets an alias"):
        lw.tool(f)


def test_deferred_tool_reports_errors_on_first_use() -> None:
    def connect(sock: socket.socket) -> None:
        """Connect."""

    t = lw.tool(defer=True)(connect)  # no error yet
    with pytest.raises(ToolDefinitionError, match="'sock'"):
        _ = t.info


def test_unbound_method_is_refused_bound_method_and_callable_objects_work() -> None:
    class Calculator:
        """A calculator."""

        def add(self, a: int, b: int) -> int:
            """Add.

            Args:
                a: One.
                b: Two.
            """
            return a + b

        async def __call__(self, expression: str) -> str:
            """Evaluate.

            Args:
                expression: What to evaluate.
            """
            return expression

    with pytest.raises(ToolDefinitionError, match="takes 'self'"):
        lw.tool(Calculator.add)
    add = lw.tool(Calculator().add)
    assert add.info.parameters["required"] == ["a", "b"]
    assert asyncio.run(add.run({"a": 1, "b": 2})) == 3

    calc = lw.tool(Calculator())
    assert calc.name == "Calculator"
    assert calc.is_async
    assert calc.info.description == "A calculator."
    assert calc.info.parameters["properties"]["expression"]["description"] == "What to evaluate."
    assert asyncio.run(calc.run({"expression": "1+1"})) == "1+1"


def test_partial_uses_the_wrapped_function_and_its_docstring() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: One.
            b: Two.
        """
        return a + b

    t = lw.tool(functools.partial(add, b=10))
    assert t.name == "add"
    assert t.info.description == "Add two numbers."
    assert t.info.parameters["properties"]["b"] == {
        "type": "integer",
        "description": "Two.",
        "default": 10,
    }
    assert asyncio.run(t.run({"a": 1})) == 11


def test_docstring_describing_missing_parameters_warns() -> None:
    def f(a: int) -> None:
        """F.

        Args:
            a: A.
            b: There is no b.
        """

    with pytest.warns(UserWarning, match="describes parameters it does not have: b"):
        lw.tool(f)


def test_star_args_and_kwargs_are_not_passed() -> None:
    seen: list[Any] = []

    def f(first: str, *args: int, last: bool = True, **kwargs: str) -> None:
        """F."""
        seen.append((first, args, last, kwargs))

    t = lw.tool(f)
    asyncio.run(t.run({"first": "a"}))
    assert seen == [("a", (), True, {})]
    with pytest.raises(ToolArgumentsError, match="args: unexpected argument"):
        t.validate({"first": "a", "args": [1]})


def test_positional_only_parameters_are_passed_by_position() -> None:
    t = lw.tool(corpus.kinds)
    assert t.validate({"a": 1, "b": "2"}) == {"a": 1, "b": 2, "c": 3}
    assert asyncio.run(t.run({"a": 1, "b": 2, "c": 10})) == 13


# --- validation ---------------------------------------------------------------------


def test_arguments_are_coerced_into_the_annotated_types() -> None:
    seen: list[Any] = []

    @lw.tool
    def place(order: Order, window: Window, person: corpus.Person, note: str = "") -> None:
        """Place an order."""
        seen.append((order, window, person, note))

    args = {
        "order": {"item": "tea"},
        "window": {"start": "2024-05-01", "days": "3"},
        "person": {"name": "Ann", "home": {"x": 1, "y": 2}},
        "note": 12,  # numbers are accepted for strings
    }
    asyncio.run(place.run(args))
    order, window, person, note = seen[0]
    assert order == Order(item="tea", quantity=1)
    assert window == Window(start=datetime.date(2024, 5, 1), days=3)
    assert person == {"name": "Ann", "home": corpus.Point(x=1, y=2)}
    assert note == "12"


def test_validation_errors_are_readable_for_the_model() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        multiply.validate({"a": "seven", "c": 1})
    assert str(info.value) == (
        "Invalid arguments for tool 'multiply':\n"
        "- a: Input should be a valid integer, unable to parse string as an integer "
        "(got 'seven')\n"
        "- b: missing required argument\n"
        "- c: unexpected argument\n"
        "Expected: multiply(a: integer, b: integer)"
    )
    assert info.value.error_type == "validation"


def test_nested_validation_errors_name_the_path() -> None:
    @lw.tool
    def place(orders: list[Order]) -> None:
        """Place orders."""

    with pytest.raises(ToolArgumentsError) as info:
        place.validate({"orders": [{"item": "a"}, {"item": "b", "quantity": "many"}]})
    assert "- orders.1.quantity: Input should be a valid integer" in str(info.value)
    assert "Expected: place(orders: array of object)" in str(info.value)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ToolArgumentsError, match="must be a JSON object, got list"):
        multiply.validate([1, 2])  # type: ignore[arg-type]


def test_null_for_an_optional_parameter_means_its_default() -> None:
    @lw.tool
    def f(a: int, b: int = 5, c: int | None = 7, opts: Order | None = None) -> tuple[Any, ...]:
        """F."""
        return (a, b, c, opts)

    # strict schemas make models send null for optional parameters they do not set
    assert f.validate({"a": 1, "b": None, "c": None}) == {"a": 1, "b": 5, "c": None, "opts": None}
    # a required parameter stays required
    with pytest.raises(ToolArgumentsError, match="a: Input should be a valid integer"):
        f.validate({"a": None})


def test_null_inside_nested_models_means_default_too() -> None:
    @lw.tool
    def f(order: Order) -> Order:
        """F."""
        return order

    assert f.validate({"order": {"item": "x", "quantity": None}}) == {
        "order": Order(item="x", quantity=1)
    }


# --- from_info ------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city."},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "at": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_from_info_calls_with_keyword_arguments() -> None:
    seen: list[dict[str, Any]] = []

    async def forecast(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "sunny"

    info = lw.ToolInfo(name="forecast", description="Weather.", parameters=SCHEMA)
    t = lw.Tool.from_info(info, forecast, parallel=True, timeout=3, terminal=False)
    assert (t.name, t.parallel, t.timeout, t.info) == ("forecast", True, 3, info)
    assert t.info is not info  # a copy: changing the caller's object changes nothing
    assert asyncio.run(t.run({"city": "Oslo", "days": 2, "units": None})) == "sunny"
    assert seen == [{"city": "Oslo", "days": 2}]  # null for an optional argument: omitted


def test_from_info_with_a_sync_function() -> None:
    t = lw.Tool.from_info(lw.ToolInfo(name="echo", parameters=SCHEMA), lambda **kw: kw["city"])
    assert not t.is_async
    assert asyncio.run(t.run({"city": "Rome"})) == "Rome"


def test_from_info_validates_against_the_schema() -> None:
    t = lw.Tool.from_info(lw.ToolInfo(name="forecast", parameters=SCHEMA), lambda **kw: "")
    with pytest.raises(ToolArgumentsError) as info:
        t.validate(
            {
                "days": "3",
                "units": "kelvin",
                "tags": ["a", 2],
                "at": {"lon": 1},
                "extra": True,
            }
        )
    assert str(info.value) == (
        "Invalid arguments for tool 'forecast':\n"
        "- city: missing required argument\n"
        "- days: expected integer, got '3'\n"
        "- units: must be one of 'metric', 'imperial', got 'kelvin'\n"
        "- tags[1]: expected string, got 2\n"
        "- at.lat: missing required argument\n"
        "- extra: unexpected argument\n"
        "Expected: forecast(city: string, days: integer (optional), "
        'units: "metric" | "imperial" (optional), tags: array of string (optional), '
        "at: object (optional))"
    )
    with pytest.raises(ToolArgumentsError, match="days: must be <= 7, got 9"):
        t.validate({"city": "x", "days": 9})
    assert t.validate({"city": "x", "days": 7, "at": {"lat": 1.5}}) == {
        "city": "x",
        "days": 7,
        "at": {"lat": 1.5},
    }


def test_from_info_needs_an_object_schema() -> None:
    bad = lw.ToolInfo(name="x", parameters={"type": "string"})
    with pytest.raises(ToolDefinitionError, match='"type": "object"'):
        lw.Tool.from_info(bad, lambda **kw: "")
    with pytest.raises(ToolDefinitionError, match="not a valid tool name"):
        lw.Tool.from_info(lw.ToolInfo(name="a b"), lambda **kw: "")


# --- tool_with ------------------------------------------------------------------------


def test_tool_with_changes_a_copy_only() -> None:
    before = multiply.info.model_copy(deep=True)
    times = lw.tool_with(
        multiply,
        name="times",
        description="Multiply.",
        parameters={"a": "Left.", "b": "Right."},
        parallel=True,
        timeout=5,
    )
    assert multiply.info == before
    assert (multiply.name, multiply.parallel, multiply.timeout) == ("multiply", False, None)
    assert (times.name, times.parallel, times.timeout) == ("times", True, 5)
    assert times.info.name == "times"
    assert times.info.description == "Multiply."
    assert times.info.parameters["properties"] == {
        "a": {"type": "integer", "description": "Left."},
        "b": {"type": "integer", "description": "Right."},
    }
    assert times(3, 4) == 12
    assert asyncio.run(times.run({"a": "3", "b": 4})) == 12


def test_tool_with_adds_a_description_in_place() -> None:
    t = lw.tool_with(lw.tool(corpus.no_docstring), parameters={"a": "The a."})
    assert t.info.parameters["properties"]["a"] == {"type": "integer", "description": "The a."}
    assert t.info.description == ""


def test_tool_with_can_clear_the_timeout_and_keeps_it_by_default() -> None:
    t = lw.tool(timeout=3)(corpus.no_params)
    assert lw.tool_with(t, name="x").timeout == 3
    assert lw.tool_with(t, timeout=None).timeout is None


def test_tool_with_rejects_unknown_parameters_and_bad_names() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        lw.tool_with(multiply, parameters={"c": "?"})
    assert str(info.value) == "Tool 'multiply' has no parameter 'c' (its parameters: a, b)."
    with pytest.raises(ToolDefinitionError, match="not a valid tool name"):
        lw.tool_with(multiply, name="bad name")
    with pytest.raises(ToolDefinitionError, match="timeout"):
        lw.tool_with(multiply, timeout=-2)


def test_tool_with_on_a_dynamic_tool() -> None:
    t = lw.Tool.from_info(lw.ToolInfo(name="forecast", parameters=SCHEMA), lambda **kw: "")
    t2 = lw.tool_with(t, parameters={"city": "Where."})
    assert t2.info.parameters["properties"]["city"]["description"] == "Where."
    assert SCHEMA["properties"]["city"]["description"] == "The city."  # type: ignore[index]


def test_objects_and_lists_sent_as_json_text_are_decoded() -> None:
    @lw.tool
    def place(order: Order, tags: list[str], note: str = "") -> None:
        """Place an order."""

    assert place.validate({"order": '{"item": "tea"}', "tags": '["a", "b"]', "note": "[1]"}) == {
        "order": Order(item="tea"),
        "tags": ["a", "b"],
        "note": "[1]",  # a string parameter keeps its text
    }
    with pytest.raises(ToolArgumentsError, match="order: Input should be a valid dictionary"):
        place.validate({"order": "tea", "tags": []})

    dynamic = lw.Tool.from_info(lw.ToolInfo(name="forecast", parameters=SCHEMA), lambda **kw: "")
    assert dynamic.validate({"city": "x", "at": '{"lat": 1}'}) == {"city": "x", "at": {"lat": 1}}


class _Point(BaseModel):
    x: int
    y: int


async def test_a_deferred_tool_validates_its_first_call_like_the_others() -> None:
    def make() -> lw.Tool[..., str]:
        @lw.tool(defer=True)
        async def norm(p: _Point, scale: float) -> str:
            """Scale a point.

            Args:
                p: A point.
                scale: A factor.
            """
            return f"{type(p).__name__} {p.x * scale}"

        return norm

    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(function="norm", arguments={"p": {"x": 3, "y": 4}, "scale": "2"})]
    )
    # nothing read .info first: the first call builds the spec and validates with it
    [result] = await lw.execute_tools(message, [make()])
    assert result.error is None and result.content == "_Point 6.0"
    assert make().validate({"p": {"x": 1, "y": 2}, "scale": "2"}) == {
        "p": _Point(x=1, y=2),
        "scale": 2.0,
    }


def test_a_tool_from_info_with_a_bad_pattern_is_refused_when_made() -> None:
    info = lw.ToolInfo(
        name="find",
        parameters={
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": "([unclosed"}},
        },
    )
    with pytest.raises(ToolDefinitionError, match="not a valid regular expression"):
        lw.Tool.from_info(info, lambda q: q)
