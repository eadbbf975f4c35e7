"""The json protocol's small-model options: grounded numbers and answers, a thought with
no digits, a worked example from the agent's own tools."""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
import pytest

import loopwright as lw
from loopwright.model.protocols._grounding import MAX_VALUES, conversation_values


@lw.tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


@lw.tool
def repeat(text: str, times: int) -> str:
    """Repeat a text.

    Args:
        text: The text.
        times: How often.
    """
    return text * times


SMALL = {"ground_numbers": True, "ground_answer": True, "plain_thought": True, "max_thought": 60}


def _action(name: str, arguments: dict[str, Any], thought: str = "Ok.") -> dict[str, Any]:
    return {"thought": thought, "action": {"name": name, "arguments": arguments}}


async def _schemas(messages: list[lw.ChatMessage], tools: list[Any], **options: Any) -> Any:
    seen: list[Any] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        seen.append(config.response_schema)
        return '{"thought": "done", "action": {"name": "finish", "arguments": {"answer": "x"}}}'

    protocol = lw.JsonProtocol(**options)
    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    await model.generate(messages, tools)
    return seen[0]


def _valid(schema: Any, reply: dict[str, Any]) -> bool:
    try:
        jsonschema.validate(reply, schema)
    except jsonschema.ValidationError:
        return False
    return True


async def test_numbers_are_copied_from_the_question_not_invented() -> None:
    ask = [lw.UserMessage(content="What is 465 * 321?")]
    schema = await _schemas(ask, [multiply], **SMALL)
    assert _valid(schema, _action("multiply", {"a": 465, "b": 321}))
    assert _valid(schema, _action("multiply", {"a": 321, "b": 465}))
    assert not _valid(schema, _action("multiply", {"a": 14320, "b": 321}))
    # without the option any number goes
    free = await _schemas(ask, [multiply])
    assert _valid(free, _action("multiply", {"a": 14320, "b": 321}))


async def test_a_tool_result_adds_its_numbers_and_becomes_the_answer() -> None:
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 465, "b": 321})
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="What is 465 * 321, times 2?"),
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="149265.0", tool_call_id="c1", function="multiply"),
    ]
    tools = [multiply, lw.submit()]
    schema = await _schemas(messages, tools, **SMALL)
    assert _valid(schema, _action("multiply", {"a": 149265, "b": 2}))
    assert _valid(schema, _action("finish", {"answer": "149265.0"}))
    assert _valid(schema, _action("finish", {"answer": "149265"}))
    assert not _valid(schema, _action("finish", {"answer": "14320"}))
    # before any result the answer is free text
    free = await _schemas(messages[:1], tools, **SMALL)
    assert _valid(free, _action("finish", {"answer": "I cannot tell"}))


async def test_a_failed_call_is_not_offered_as_the_answer() -> None:
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 1, "b": 2})
    error = lw.ToolCallError(type="tool_error", message="boom 999")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="What is 1 * 2?"),
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="boom 999", tool_call_id="c1", function="multiply", error=error),
    ]
    schema = await _schemas(messages, [multiply], **SMALL)
    assert not _valid(schema, _action("multiply", {"a": 999, "b": 2}))
    assert _valid(schema, _action("finish", {"answer": "anything"}))


async def test_integer_arguments_take_only_whole_numbers_and_free_ones_stay_free() -> None:
    ask = [lw.UserMessage(content="Repeat 'ab' 3.5 or 4 times")]
    schema = await _schemas(ask, [repeat], **SMALL)
    assert _valid(schema, _action("repeat", {"text": "ab", "times": 4}))
    assert not _valid(schema, _action("repeat", {"text": "ab", "times": 3.5}))
    # no whole number written: the argument is not limited
    schema = await _schemas([lw.UserMessage(content="Repeat 'ab' 2.5 times")], [repeat], **SMALL)
    assert _valid(schema, _action("repeat", {"text": "ab", "times": 7}))


async def test_a_plain_thought_has_no_digits_and_a_bound() -> None:
    schema = await _schemas([lw.UserMessage(content="What is 2 * 3?")], [multiply], **SMALL)
    assert _valid(schema, _action("multiply", {"a": 2, "b": 3}, "I multiply the numbers."))
    assert not _valid(schema, _action("multiply", {"a": 2, "b": 3}, "2 * 3 = 5, 5 is 5"))
    assert not _valid(schema, _action("multiply", {"a": 2, "b": 3}, "x" * 60 + "."))
    assert _valid(schema, _action("multiply", {"a": 2, "b": 3}, "x" * 59 + "."))
    assert _valid(schema, _action("multiply", {"a": 2, "b": 3}, ""))  # no thought
    # one sentence, no gap where a number was left out
    assert not _valid(schema, _action("multiply", {"a": 2, "b": 3}, "The answer is ."))
    assert not _valid(schema, _action("multiply", {"a": 2, "b": 3}, "I multiply"))


def test_values_are_bounded_and_come_only_from_the_user_and_results() -> None:
    messages: list[lw.ChatMessage] = [
        lw.SystemMessage(content="Rule 7 of 12."),
        lw.UserMessage(content="Add 1,200 and -3.5 then 1,200 again " + "9 " * 10_000),
        lw.AssistantMessage(content="I think 77."),
    ]
    values = conversation_values(messages)
    assert values.numbers[:3] == (1200, -3.5, 9)
    assert 7 not in values.numbers and 77 not in values.numbers
    many = [lw.UserMessage(content=" ".join(str(i) for i in range(500)))]
    assert len(conversation_values(many).numbers) <= MAX_VALUES


async def test_the_worked_example_uses_the_agents_own_tool() -> None:
    seen: list[str] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        seen.append(messages[0].content)
        return '{"thought": "done", "action": {"name": "finish", "arguments": {"answer": "x"}}}'

    protocol = lw.JsonProtocol(examples="auto")
    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    await model.generate([lw.UserMessage(content="go")], [repeat, lw.submit()])
    prompt = seen[0]
    assert "Example:" in prompt
    line = next(x for x in prompt.splitlines() if '"name": "repeat"' in x)
    import json

    example = json.loads(line)["action"]["arguments"]
    jsonschema.validate(example, repeat.info.parameters)
    assert '"name": "finish"' in prompt.split("Example:")[1]


def test_examples_must_be_examples_or_auto() -> None:
    with pytest.raises(lw.ConfigurationError, match="auto"):
        lw.JsonProtocol(examples="some")  # type: ignore[arg-type]


@lw.tool
def convert(value: float, unit: Literal["km", "m", "mile"]) -> float:
    """Convert a length to metres.

    Args:
        value: The length.
        unit: Its unit.
    """
    return value


async def test_enum_values_are_limited_to_those_written_as_words() -> None:
    ask = [lw.UserMessage(content="Convert 5 km, please.")]
    schema = await _schemas(ask, [convert], **SMALL)
    assert _valid(schema, _action("convert", {"value": 5, "unit": "km"}))
    assert not _valid(schema, _action("convert", {"value": 5, "unit": "m"}))  # "m" is no word
    # none of the values written: all of them stay
    schema = await _schemas([lw.UserMessage(content="Convert 5 leagues")], [convert], **SMALL)
    assert _valid(schema, _action("convert", {"value": 5, "unit": "mile"}))


def _reply(text: str) -> Any:
    return lambda messages, tools, config: text


async def test_a_repeated_call_is_taken_as_the_answer_with_its_result() -> None:
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 465.0, "b": 321})
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="What is 465 * 321?"),
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="149265.0", tool_call_id="c1", function="multiply"),
    ]
    again = '{"thought": "x", "action": {"name": "multiply", "arguments": {"a": 465, "b": 321}}}'
    protocol = lw.JsonProtocol(repeat_answers=True)
    model = lw.get_model("mock", outputs=_reply(again), tool_protocol=protocol)
    out = await model.generate(messages, [multiply, lw.submit()])
    assert [(c.function, c.arguments) for c in out.tool_calls] == [
        ("submit", {"answer": "149265.0"})
    ]
    # another call goes through; so does the repeat without the option
    other = again.replace("321", "465")
    model = lw.get_model("mock", outputs=_reply(other), tool_protocol=protocol)
    out = await model.generate(messages, [multiply, lw.submit()])
    assert out.tool_calls[0].function == "multiply"
    model = lw.get_model("mock", outputs=_reply(again), tool_protocol=lw.JsonProtocol())
    out = await model.generate(messages, [multiply, lw.submit()])
    assert out.tool_calls[0].function == "multiply"


async def test_a_failed_call_repeated_is_a_call_again() -> None:
    call = lw.ToolCall(id="c1", function="multiply", arguments={"a": 1, "b": 2})
    error = lw.ToolCallError(type="tool_error", message="busy")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="What is 1 * 2?"),
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="busy", tool_call_id="c1", function="multiply", error=error),
    ]
    again = '{"thought": "x", "action": {"name": "multiply", "arguments": {"a": 1, "b": 2}}}'
    model = lw.get_model(
        "mock", outputs=_reply(again), tool_protocol=lw.JsonProtocol(repeat_answers=True)
    )
    out = await model.generate(messages, [multiply, lw.submit()])
    assert out.tool_calls[0].function == "multiply"


async def test_the_observation_hint_follows_successful_results_only() -> None:
    seen: list[str] = []

    def respond(messages: Any, tools: Any, config: lw.GenerateConfig) -> str:
        seen.extend(m.content for m in messages if m.role == "user")
        return '{"thought": "done", "action": {"name": "finish", "arguments": {"answer": "x"}}}'

    ok = lw.ToolCall(id="c1", function="multiply", arguments={"a": 1, "b": 2})
    bad = lw.ToolCall(id="c2", function="multiply", arguments={"a": 1, "b": 0})
    error = lw.ToolCallError(type="tool_error", message="nope")
    messages: list[lw.ChatMessage] = [
        lw.UserMessage(content="go"),
        lw.AssistantMessage(tool_calls=[ok]),
        lw.ToolMessage(content="2", tool_call_id="c1", function="multiply"),
        lw.AssistantMessage(tool_calls=[bad]),
        lw.ToolMessage(content="nope", tool_call_id="c2", function="multiply", error=error),
    ]
    protocol = lw.JsonProtocol(observation_hint="HINT LINE", merge_user_turns=False)
    model = lw.get_model("mock", outputs=respond, tool_protocol=protocol)
    await model.generate(messages, [multiply])
    assert '{"observation": "2"}\nHINT LINE' in seen
    assert '{"error": "nope"}' in seen


async def test_free_text_is_copied_from_the_question_or_a_result() -> None:
    ask = [lw.UserMessage(content="Repeat 'hello world' 3 times, please")]
    schema = await _schemas(ask, [repeat], **SMALL)
    assert _valid(schema, _action("repeat", {"text": "hello world", "times": 3}))
    assert not _valid(schema, _action("repeat", {"text": "apple pie", "times": 3}))
    assert not _valid(schema, _action("repeat", {"text": "hello world' 3", "times": 3}))
    call = lw.ToolCall(id="c1", function="repeat", arguments={"text": "hello world", "times": 3})
    messages: list[lw.ChatMessage] = [
        *ask,
        lw.AssistantMessage(tool_calls=[call]),
        lw.ToolMessage(content="Oslo Norway", tool_call_id="c1", function="repeat"),
    ]
    schema = await _schemas(messages, [repeat], **SMALL)
    assert _valid(schema, _action("repeat", {"text": "Oslo", "times": 3}))
