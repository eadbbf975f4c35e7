"""Hostile arguments reach the model as errors, or the tool as data (issue 16.7).

Deeply nested arguments ended runs with ``RecursionError``; they are now refused before
anything walks them. Lone surrogates and NUL bytes are data: a tool gets them unchanged,
and error messages that show them are escaped.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

import loopwright as lw
from loopwright._nesting import MAX_NESTING as MAX_ARGUMENT_DEPTH

DEPTH = 100_000


def nested_dicts(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_lists(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


class Node(BaseModel):
    a: Node | int


called: list[Any] = []


@lw.tool
def any_value(x: Any) -> str:
    """Take anything."""
    called.append(x)
    return "ran"


@lw.tool
def tree(x: Node) -> str:
    """Take a tree."""
    called.append(x)
    return "ran"


@lw.tool
def text(x: str) -> str:
    """Take text."""
    return repr(x)


SCHEMA = {
    "type": "object",
    "$defs": {"node": {"type": "object", "properties": {"a": {"$ref": "#/$defs/node"}}}},
    "properties": {"x": {"$ref": "#/$defs/node"}, "s": {"type": "string"}},
}


def _schema_fn(**kw: Any) -> str:
    called.append(kw)
    return repr(kw.get("s"))


SCHEMA_TOOL = lw.Tool.from_info(lw.ToolInfo(name="schema_tool", parameters=SCHEMA), _schema_fn)
TOOLS = [any_value, tree, text, SCHEMA_TOOL]


async def run_one(name: str, arguments: dict[str, Any]) -> lw.ToolMessage:
    message = lw.AssistantMessage(
        tool_calls=[lw.ToolCall(id="c1", function=name, arguments=arguments)]
    )
    [result] = await lw.execute_tools(message, TOOLS)
    return result


@pytest.mark.parametrize("name", ["any_value", "tree", "schema_tool"])
@pytest.mark.parametrize("make", [nested_dicts, nested_lists])
async def test_deeply_nested_arguments_are_an_error_for_the_model(name: str, make: Any) -> None:
    called.clear()
    deep = make(DEPTH)
    start = time.perf_counter()
    result = await run_one(name, {"x": deep})
    assert time.perf_counter() - start < 5
    assert result.error is not None and result.error.type == "validation"
    assert f"more than {MAX_ARGUMENT_DEPTH} levels deep" in result.content
    assert called == []


async def test_deep_json_text_for_an_object_is_an_error_for_the_model() -> None:
    # a model that sends the object as JSON text: decoding it must not recurse either
    unparseable = '{"a": ' * DEPTH + "1" + "}" * DEPTH
    parseable = '{"a": ' * 200 + "1" + "}" * 200
    for arguments in ({"x": unparseable}, {"x": parseable}):
        for name in ("tree", "schema_tool"):
            called.clear()
            result = await run_one(name, arguments)
            assert result.error is not None and result.error.type == "validation", name
            assert called == []


async def test_arguments_at_the_depth_limit_are_accepted() -> None:
    called.clear()
    # the arguments object is one level: its value may nest one level less
    result = await run_one("any_value", {"x": nested_dicts(MAX_ARGUMENT_DEPTH - 1)})
    assert result.error is None and result.content == "ran"
    result = await run_one("any_value", {"x": nested_dicts(MAX_ARGUMENT_DEPTH)})
    assert result.error is not None


@pytest.mark.parametrize("value", ["a\ud800b", "nul\x00byte", "\udfff\x00\ud83d"])
async def test_surrogates_and_nul_bytes_reach_the_tool_unchanged(value: str) -> None:
    result = await run_one("text", {"x": value})
    assert result.error is None and result.content == repr(value)
    result = await run_one("schema_tool", {"s": value})
    assert result.error is None and result.content == repr(value)


async def test_error_messages_escape_surrogates_and_nul_bytes() -> None:
    hostile = "\ud800\x00\x1b[8m"
    for name, arguments in (
        ("text", {"x": 1, hostile: 2}),
        ("text", {"x": "s", f"y{hostile}": 2}),
        ("text", {"x": [hostile]}),
        ("schema_tool", {"s": [hostile]}),
        ("schema_tool", {"x": {"a": hostile}}),
    ):
        result = await run_one(name, arguments)
        assert result.error is not None and result.error.type == "validation"
        result.content.encode("utf-8")  # no lone surrogate left
        assert "\x00" not in result.content and "\x1b" not in result.content, result.content
    fixed = lw.Tool.from_info(lw.ToolInfo(name="fixed", parameters=SCHEMA), lambda s="": s)
    with pytest.raises(lw.ToolArgumentsError) as info:
        fixed.validate({hostile: 1})
    assert "- \\ud800\\x00\\x1b[8m: unexpected argument" in str(info.value)


async def test_a_run_with_deeply_nested_arguments_goes_on() -> None:
    outputs = [
        lw.ModelOutput.for_tool_call("tree", {"x": nested_dicts(DEPTH)}),
        lw.ModelOutput.for_tool_call("text", {"x": "\ud800\x00"}),
        lw.ModelOutput.for_tool_call("submit", {"answer": "done"}),
    ]
    called.clear()
    start = time.perf_counter()
    state = await lw.run(
        lw.react(tools=TOOLS), "go", model=lw.get_model("mock", outputs=outputs), db=False
    )
    assert time.perf_counter() - start < 10
    assert state.completed == "submit" and state.text == "done"
    results = [m for m in state.messages if isinstance(m, lw.ToolMessage)]
    assert results[0].error is not None and "levels deep" in results[0].content
    assert results[1].error is None and results[1].content == repr("\ud800\x00")
    assert called == []


async def test_a_huge_array_is_validated_in_linear_time_with_few_errors_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "array", "items": {"type": "integer"}}},
    }
    seen: list[Any] = []
    t = lw.Tool.from_info(lw.ToolInfo(name="ints", parameters=schema), lambda n: seen.append(n))
    floats = [float(i) for i in range(10_000)]
    start = time.perf_counter()
    assert t.validate({"n": floats})["n"] == list(range(10_000))
    assert type(floats[1]) is float  # the call's arguments are not changed
    with pytest.raises(lw.ToolArgumentsError, match="more than 10000 floats where integers"):
        t.validate({"n": [1.0] * 200_000})
    with pytest.raises(lw.ToolArgumentsError) as info:
        t.validate({"n": ["x"] * 200_000})
    assert time.perf_counter() - start < 10
    assert str(info.value).count("\n- ") == 11  # ten errors and "... and more"
