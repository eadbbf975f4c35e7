"""Tools made from a JSON schema (``Tool.from_info``) bind like tools made from a function.

Issue 15.6: arguments that do not fit the callable's signature or the schema's types are
errors for the model, whatever the schema says about extra keys; a strict schema's
``null`` means the default; ``errors_to_model`` makes a tool's own exceptions errors for
the model.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopwright as lw
from loopwright import ToolDefinitionError

# an OpenAI / MCP style schema: no "additionalProperties": false
OPEN = {
    "type": "object",
    "properties": {
        "start": {"type": "integer"},
        "stop": {"type": ["integer", "null"]},
        "steps": {"type": "array", "items": {"type": "integer"}},
        "scale": {"type": "number"},
    },
    "required": ["start"],
}
ROWS = list(range(10))


def rows(start: int, stop: int | None = None, steps: list[int] = [], scale: float = 1) -> str:  # noqa: B006
    return f"{ROWS[start:stop]} {[type(s).__name__ for s in steps]} {type(scale).__name__}"


def call(name: str, **args: Any) -> lw.AssistantMessage:
    return lw.AssistantMessage(tool_calls=[lw.ToolCall(id="c1", function=name, arguments=args)])


async def run_one(tool: lw.Tool[..., Any], **args: Any) -> lw.ToolMessage:
    [result] = await lw.execute_tools(call(tool.name, **args), [tool])
    return result


SLICE = lw.Tool.from_info(lw.ToolInfo(name="rows", parameters=OPEN), rows)


async def test_an_unknown_argument_is_an_error_for_the_model_without_additional_false() -> None:
    result = await run_one(SLICE, start=1, colour="red")
    assert result.error is not None and result.error.type == "validation"
    assert result.content == (
        "Invalid arguments for tool 'rows':\n"
        "- colour: unexpected argument\n"
        "Expected: rows(start: integer, stop: integer | null (optional), "
        "steps: array of integer (optional), scale: number (optional))"
    )


async def test_a_function_taking_kwargs_gets_unknown_arguments() -> None:
    t = lw.Tool.from_info(lw.ToolInfo(name="kw", parameters=OPEN), lambda **kw: sorted(kw))
    result = await run_one(t, start=1, colour="red")
    assert result.error is None and result.content == '["colour","start"]'


async def test_a_parameter_the_schema_leaves_out_is_missing_for_the_model() -> None:
    def needs(start: int, key: str) -> str:
        return key

    t = lw.Tool.from_info(lw.ToolInfo(name="needs", parameters=OPEN), needs)
    result = await run_one(t, start=1)
    assert result.error is not None and "- key: missing required argument" in result.content


async def test_integral_floats_become_ints_and_others_are_errors() -> None:
    result = await run_one(SLICE, start=7.0, stop=9.0, steps=[1.0, 2], scale=2.0)
    assert result.error is None
    assert result.content == "[7, 8] ['int', 'int'] float"  # "number" keeps its float
    result = await run_one(SLICE, start=1.5)
    assert result.error is not None and "- start: expected integer, got 1.5" in result.content
    for bad in (float("inf"), float("nan"), True, "1"):
        result = await run_one(SLICE, start=bad)
        assert result.error is not None and result.error.type == "validation", bad


async def test_integers_in_anyof_and_refs_are_converted_too() -> None:
    schema = {
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "b": {"$ref": "#/$defs/n"},
            "c": {"type": "object", "properties": {"d": {"type": "integer"}}},
        },
    }
    seen: list[dict[str, Any]] = []
    t = lw.Tool.from_info(lw.ToolInfo(name="t", parameters=schema), lambda **kw: seen.append(kw))
    arguments = {"a": 3.0, "b": 4.0, "c": {"d": 5.0}}
    await run_one(t, **arguments)
    assert seen == [{"a": 3, "b": 4, "c": {"d": 5}}]
    assert [type(v) for v in (seen[0]["a"], seen[0]["b"], seen[0]["c"]["d"])] == [int] * 3
    assert arguments == {"a": 3.0, "b": 4.0, "c": {"d": 5.0}}  # the call is not changed
    assert type(arguments["c"]["d"]) is float


async def test_a_strict_schemas_null_means_the_default() -> None:
    @lw.tool
    def forecast(city: str, days: int = 3, units: str = "metric") -> str:
        """The weather."""
        return f"{city} {days} {units}"

    strict = lw.strict_schema(forecast.info.parameters)
    assert strict["required"] == ["city", "days", "units"]
    fn = forecast.fn
    t = lw.Tool.from_info(lw.ToolInfo(name="forecast", parameters=strict), fn)
    result = await run_one(t, city="Oslo", days=None, units=None)
    assert (result.error, result.content) == (None, "Oslo 3 metric")
    result = await run_one(forecast, city="Oslo", days=None, units="imperial")
    assert (result.error, result.content) == (None, "Oslo 3 imperial")
    result = await run_one(t, city="Oslo", days=2.0, units=None)
    assert (result.error, result.content) == (None, "Oslo 2 metric")


async def test_a_null_for_a_parameter_that_takes_none_stays_none() -> None:
    def f(a: int | None = 5, b: Any = 5, c: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return f"{a} {b} {c}"

    schema = {
        "type": "object",
        "properties": {k: {"type": ["integer", "null"]} for k in "abc"},
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    }
    t = lw.Tool.from_info(lw.ToolInfo(name="f", parameters=schema), f)
    result = await run_one(t, a=None, b=None, c=None)
    assert result.content == "None None None"


async def test_errors_to_model_makes_a_tools_exceptions_errors_for_the_model() -> None:
    @lw.tool(errors_to_model=(ValueError, KeyError))
    def parse(text: str) -> int:
        """Parse a number."""
        if text == "key":
            raise KeyError("no such key")
        if text == "empty":
            raise ValueError
        if text == "other":
            raise RuntimeError("a bug")
        return int(text)

    result = await run_one(parse, text="x")
    assert result.error is not None and result.error.type == "tool_error"
    assert result.content == "ValueError: invalid literal for int() with base 10: 'x'"
    assert (await run_one(parse, text="key")).content == "KeyError: 'no such key'"
    assert (await run_one(parse, text="empty")).content == "ValueError"
    with pytest.raises(RuntimeError, match="a bug"):  # not listed: a bug, the run ends
        await run_one(parse, text="other")
    assert repr(parse) == (
        "Tool('parse', errors_to_model=(<class 'ValueError'>, <class 'KeyError'>))"
    )
    plain = lw.tool_with(parse, errors_to_model=())
    with pytest.raises(ValueError):
        await run_one(plain, text="x")

    def lookup(key: str) -> str:
        return {"a": "1"}[key]

    info = lw.ToolInfo(name="lookup", parameters={"type": "object", "properties": {}})
    dynamic = lw.Tool.from_info(info, lookup, errors_to_model=KeyError)
    assert (await run_one(dynamic, key="b")).content == "KeyError: 'b'"


@pytest.mark.parametrize("bad", [ValueError("x"), (ValueError, 3), BaseException, "ValueError"])
def test_errors_to_model_takes_exception_classes_only(bad: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="errors_to_model must be an exception class"):
        lw.tool(errors_to_model=bad)(rows)


def test_an_invalid_schema_is_refused_when_the_tool_is_made() -> None:
    bad = {"type": "object", "properties": {"a": {"type": "integr"}}}
    with pytest.raises(ToolDefinitionError, match="not a valid JSON schema"):
        lw.Tool.from_info(lw.ToolInfo(name="x", parameters=bad), lambda a: a)
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    with pytest.raises(ToolDefinitionError, match="only references inside the schema"):
        lw.Tool.from_info(lw.ToolInfo(name="x", parameters=remote), lambda a: a)


async def test_a_run_goes_on_after_a_hallucinated_argument() -> None:
    outputs = [
        lw.ModelOutput.for_tool_call("rows", {"start": 8, "verbose": True}),
        lw.ModelOutput.for_tool_call("rows", {"start": 8.0}),
        lw.ModelOutput.for_tool_call("submit", {"answer": "done"}),
    ]
    agent = lw.react(tools=[SLICE])
    state = await lw.run(agent, "go", model=lw.get_model("mock", outputs=outputs), db=False)
    assert state.completed == "submit" and state.text == "done"
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[0].error is not None and "verbose: unexpected argument" in results[0].content
    assert results[1].error is None and results[1].content.startswith("[8, 9]")


async def test_a_renamed_copy_of_a_deferred_tool_keeps_its_info_when_first_called() -> None:
    @lw.tool(defer=True)
    def area(width: int, height: int = 1) -> int:
        """The area."""
        return width * height

    copy = lw.tool_with(area, name="size", description="Size.", parameters={"width": "W."})
    result = await run_one(copy, width=3.0, height=2)
    assert (result.error, result.content) == (None, "6")
    assert (copy.info.name, copy.info.description) == ("size", "Size.")
    assert copy.info.parameters["properties"]["width"]["description"] == "W."


def test_a_schema_requiring_what_the_function_cannot_take_is_refused_when_made() -> None:
    # every call would fail: the model sends "c" as required, and is told "c: unexpected"
    def two(a: int) -> int:
        return a

    needs_c = {"type": "object", "properties": {"a": {}, "c": {}}, "required": ["a", "c"]}
    with pytest.raises(ToolDefinitionError, match=r"requires 'c'.*parameters: a"):
        lw.Tool.from_info(lw.ToolInfo(name="two", parameters=needs_c), two)
    lw.Tool.from_info(lw.ToolInfo(name="kw", parameters=needs_c), lambda **kw: kw)  # takes any
