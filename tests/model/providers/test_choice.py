"""The embedded model's first choice (``providers/_choice.py``): finding the choice among
named branches in a reply schema, the calibrating conversation, the pick. No model needed;
the choice made by the real model is tested in ``test_local.py``."""

from __future__ import annotations

from typing import Any

import jsonschema

import loopwright as lw
from loopwright.model.providers._choice import (
    CONTENT_FREE,
    MAX_OPTIONS,
    choice_point,
    content_free,
    pick,
)


@lw.tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@lw.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


async def _json_schema(tools: list[Any], **options: Any) -> dict[str, Any]:
    seen: list[Any] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        seen.append(config.response_schema)
        return '{"thought": "", "action": {"name": "finish", "arguments": {"answer": "x"}}}'

    protocol = lw.JsonProtocol(**options)
    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    await model.generate([lw.UserMessage(content="What is 465 * 321?")], tools)
    schema: dict[str, Any] = seen[0]
    return schema


def _action(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"thought": "ok", "action": {"name": name, "arguments": arguments}}


async def test_the_json_protocols_action_is_a_choice_among_the_offered_tools() -> None:
    schema = await _json_schema([add, multiply, lw.submit()], ground_numbers=True)
    point = choice_point(schema)
    assert point is not None
    assert (point.prop, point.key) == ("action", "name")
    assert list(point.branches) == ["add", "multiply", "finish"]
    assert point.prefix == '{"action": {"name": "'
    chosen = point.restrict(schema, "multiply")
    jsonschema.validate(_action("multiply", {"a": 465, "b": 321}), chosen)
    # only the chosen branch is left; its arguments keep their grounding
    for wrong in (_action("add", {"a": 465, "b": 321}), _action("multiply", {"a": 7, "b": 1})):
        try:
            jsonschema.validate(wrong, chosen)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"{wrong} was allowed")
    # the schema it was made from is unchanged
    jsonschema.validate(_action("add", {"a": 465, "b": 321}), schema)


async def test_one_offered_action_is_no_choice() -> None:
    schema = await _json_schema([multiply, lw.submit()])
    assert choice_point(schema) is not None  # multiply or finish
    branch = schema["properties"]["action"]["anyOf"][0]
    single = {"type": "object", "properties": {"action": {"anyOf": [branch]}}}
    assert choice_point(single) is None
    assert choice_point({"type": "object", "properties": {"action": branch}}) is None


def test_schemas_that_are_not_a_choice_among_names() -> None:
    def union(*branches: Any) -> dict[str, Any]:
        return {"type": "object", "properties": {"x": {"anyOf": list(branches)}}}

    def named(name: Any, required: bool = True) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"name": {"const": name}, "v": {"type": "integer"}},
            "required": ["name"] if required else [],
        }

    assert choice_point(None) is None
    assert choice_point({"type": "array", "items": {}}) is None
    assert choice_point({"type": "object", "properties": "nope"}) is None
    assert choice_point(union(named("a"), named("b"))) is not None
    assert choice_point(union(named("a"), named("a"))) is None  # names not unique
    assert choice_point(union(named("a"), named(3))) is None  # not a string
    assert choice_point(union(named("a"), named(" "))) is None  # blank
    assert choice_point(union(named("a"), named("b", required=False))) is None
    assert choice_point(union(named("a"), {"type": "string"})) is None
    assert choice_point(union(named("a"), "junk")) is None
    many = union(*(named(f"t{i}") for i in range(MAX_OPTIONS + 1)))
    assert choice_point(many) is None


def test_the_calibrating_conversation_replaces_only_the_task() -> None:
    messages = [
        {"role": "system", "content": "You have tools."},
        {"role": "user", "content": "What is 465 * 321?"},
    ]
    plain = content_free(messages)
    assert plain == [messages[0], {"role": "user", "content": CONTENT_FREE}]
    assert messages[1]["content"] == "What is 465 * 321?"  # not changed in place
    # after a tool result (a user turn in a text protocol), no calibration
    later = [*messages, {"role": "assistant", "content": "{}"}, {"role": "user", "content": "9"}]
    assert content_free(later) is None
    assert content_free([{"role": "system", "content": "x"}]) is None


def test_the_pick_is_the_best_calibrated_score() -> None:
    scores = {"add": -2.0, "multiply": -5.0, "finish": -3.0}
    assert pick(scores, None) == "add"
    # add is what the prompt favours whatever the task: the task raises multiply most
    prior = {"add": -1.0, "multiply": -7.0, "finish": -2.5}
    assert pick(scores, prior) == "multiply"
    assert pick({"a": -1.0, "b": -1.0}, None) == "a"  # ties: the first offered
