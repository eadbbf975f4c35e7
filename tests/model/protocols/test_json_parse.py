"""The json protocol's parser: one test per edge case of the issue, and then some."""

from __future__ import annotations

import json

import pytest

import loopwright as lw
from loopwright.model.protocols import JsonProtocol, is_format_error

from .helpers import MULTIPLY, NO_SUBMIT, SUBMIT, TOOLS, error_of, only_call, parse

P = JsonProtocol()


def act(name: str, arguments: object, thought: str = "t") -> str:
    return json.dumps({"thought": thought, "action": {"name": name, "arguments": arguments}})


def test_an_action_object_becomes_a_tool_call_with_the_thought_as_reasoning() -> None:
    out = parse(P, act("multiply", {"a": 465, "b": 321}, "I need the product."))
    call = only_call(out)
    assert (call.function, call.arguments, call.parse_error) == (
        "multiply",
        {"a": 465, "b": 321},
        None,
    )
    assert out.message.reasoning == "I need the product."
    assert out.message.content == ""
    assert out.stop_reason == "tool_calls"


def test_json_in_fences_with_prose_around_it() -> None:
    text = f"Sure! Here is my action:\n```json\n{act('multiply', {'a': 2, 'b': 3})}\n```\nDone."
    assert only_call(parse(P, text)).arguments == {"a": 2, "b": 3}


def test_prose_with_braces_before_the_object_is_skipped() -> None:
    text = "I'll use {curly} notes first. " + act("multiply", {"a": 2, "b": 3})
    assert only_call(parse(P, text)).arguments == {"a": 2, "b": 3}


def test_braces_and_quotes_inside_strings() -> None:
    query = 'say "hi" to {name} }} and \\ {{x}} \' ok'
    out = parse(P, act("web_search", {"query": query}, thought="a } brace { here"))
    assert only_call(out).arguments == {"query": query}
    assert out.message.reasoning == "a } brace { here"


def test_truncated_json_at_max_tokens_is_a_format_error() -> None:
    text = '{"thought": "run it", "action": {"name": "web_search", "arguments": {"query": "rm -'
    out = parse(P, text, stop_reason="max_tokens")
    assert is_format_error(out)
    assert "cut off" in error_of(out)


def test_truncated_json_that_stopped_normally_is_repaired() -> None:
    out = parse(P, '{"thought": "x", "action": {"name": "multiply", "arguments": {"a": 2, "b": 3}}')
    assert only_call(out).arguments == {"a": 2, "b": 3}


def test_near_json_single_quotes_trailing_commas_python_literals() -> None:
    tool = lw.ToolInfo(name="anything", parameters={"type": "object"})
    text = (
        "{'thought': 'x', 'action': {'name': 'anything', "
        "'arguments': {'a': True, 'b': None, 'c': [1, 2,],},},}"
    )
    call = only_call(parse(P, text, [tool]))
    assert call.arguments == {"a": True, "b": None, "c": [1, 2]}


def test_paren_and_colon_inside_arguments() -> None:
    query = "f(x): y) :) (("
    assert only_call(parse(P, act("web_search", {"query": query}))).arguments == {"query": query}


def test_a_hallucinated_observation_after_the_action_is_dropped() -> None:
    text = (
        act("multiply", {"a": 2, "b": 3})
        + '\n{"observation": "7"}\n'
        + act("submit", {"answer": "7"})
    )
    out = parse(P, text)
    assert only_call(out).function == "multiply"
    request = P.render([lw.UserMessage(content="t"), out.message], TOOLS, lw.GenerateConfig())
    assert request.messages[-1].content == act("multiply", {"a": 2, "b": 3})


def test_action_and_final_answer_in_one_object_the_action_wins() -> None:
    text = json.dumps(
        {"thought": "x", "action": {"name": "clock", "arguments": {}}, "final_answer": "noon"}
    )
    assert only_call(parse(P, text)).function == "clock"


def test_several_actions_in_one_reply_only_the_first_runs() -> None:
    text = json.dumps(
        {
            "thought": "two",
            "action": [
                {"name": "clock", "arguments": {}},
                {"name": "multiply", "arguments": {"a": 1, "b": 2}},
            ],
        }
    )
    assert only_call(parse(P, text)).function == "clock"
    two_objects = act("clock", {}) + "\n" + act("multiply", {"a": 1, "b": 2})
    assert only_call(parse(P, two_objects)).function == "clock"


def test_missing_arguments_for_a_tool_with_required_parameters() -> None:
    out = parse(P, '{"thought": "x", "action": {"name": "web_search"}}')
    assert is_format_error(out)
    assert "'query'" in (only_call(out).parse_error or "")


def test_missing_or_empty_arguments_are_fine_for_a_tool_without_parameters() -> None:
    assert only_call(parse(P, '{"thought": "x", "action": {"name": "clock"}}')).arguments == {}
    assert only_call(parse(P, act("clock", ""))).arguments == {}


@pytest.mark.parametrize(
    "name", ["[web_search]", "`web_search`", "'web_search'", "Web_Search", "WEB SEARCH"]
)
def test_tool_names_in_brackets_quotes_backticks_or_other_case(name: str) -> None:
    assert only_call(parse(P, act(name, {"query": "x"}))).function == "web_search"


def test_unknown_tool_names_pass_through_for_the_tool_layer_to_report() -> None:
    call = only_call(parse(P, act("calculator", {"x": 1})))
    assert (call.function, call.arguments, call.parse_error) == ("calculator", {"x": 1}, None)


def test_plain_text_with_no_json_is_a_format_error() -> None:
    out = parse(P, "The answer is 42.")
    # no tool named: no (fake) tool call; the message keeps the text and says what is wrong
    assert out.tool_calls == [] and is_format_error(out)
    error = out.message.format_error
    assert error is not None and "no JSON object" in error
    # the error shows the expected format with the valid action names
    assert '"action"' in error and "multiply" in error
    assert out.message.content == "The answer is 42."


@pytest.mark.parametrize("text", ["", " \n "])
def test_empty_replies_are_format_errors(text: str) -> None:
    out = parse(P, text)
    assert is_format_error(out) and "empty" in error_of(out)


def test_json_without_an_action_is_a_format_error() -> None:
    out = parse(P, '{"thought": "just thinking"}')
    assert is_format_error(out) and '"action"' in error_of(out)


def test_an_action_without_a_name_is_a_format_error() -> None:
    out = parse(P, '{"thought": "x", "action": {"arguments": {"a": 1}}}')
    assert is_format_error(out)


@pytest.mark.parametrize(
    ("value", "text"), [(0, "0"), ("", ""), (False, "false"), ([], "[]"), (0.0, "0.0")]
)
def test_falsy_final_answers_are_answers(value: object, text: str) -> None:
    call = only_call(parse(P, act("finish", {"answer": value})))
    assert (call.function, call.arguments) == ("submit", {"answer": text})


@pytest.mark.parametrize(("value", "text"), [(0, "0"), ("", ""), (False, "false"), ([], "[]")])
def test_falsy_final_answers_without_a_submit_tool_are_the_text(value: object, text: str) -> None:
    out = parse(P, act("finish", {"answer": value}), NO_SUBMIT)
    assert out.tool_calls == [] and out.message.content == text


def test_finish_without_an_answer_is_a_format_error() -> None:
    for args in ({}, None):
        out = parse(P, act("finish", args))
        assert is_format_error(out)
        assert "no answer" in (only_call(out).parse_error or "")


def test_finish_accepts_a_bare_answer_and_the_submit_name() -> None:
    assert only_call(parse(P, act("finish", "Paris"))).arguments == {"answer": "Paris"}
    assert only_call(parse(P, act("submit", {"answer": "Paris"}))).arguments == {"answer": "Paris"}
    out = parse(P, '{"thought": "x", "final_answer": 7}')
    assert only_call(out).arguments == {"answer": "7"}


def test_an_answer_tool_with_more_parameters_gets_them_all() -> None:
    rich = SUBMIT.model_copy(
        update={
            "parameters": {
                "type": "object",
                "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
                "required": ["answer", "confidence"],
            }
        }
    )
    out = parse(P, act("finish", {"answer": 4, "confidence": 0.9}), [MULTIPLY, rich])
    assert only_call(out).arguments == {"answer": "4", "confidence": 0.9}


def test_tolerated_shapes() -> None:
    flat = '{"name": "multiply", "arguments": {"a": 1, "b": 2}}'
    assert only_call(parse(P, flat)).arguments == {"a": 1, "b": 2}
    string_action = '{"thought": "x", "action": "multiply", "action_input": {"a": 1, "b": 2}}'
    assert only_call(parse(P, string_action)).arguments == {"a": 1, "b": 2}
    encoded = act("multiply", json.dumps({"a": 1, "b": 2}))
    assert only_call(parse(P, encoded)).arguments == {"a": 1, "b": 2}
    text_arg = act("web_search", "weather in Paris")
    assert only_call(parse(P, text_arg)).arguments == {"query": "weather in Paris"}


def test_non_object_arguments_for_a_multi_parameter_tool_are_a_format_error() -> None:
    out = parse(P, act("multiply", [2, 3]))
    assert is_format_error(out) and only_call(out).function == "multiply"


def test_a_finish_tool_of_the_user_is_called_like_any_other_when_submit_exists() -> None:
    finish = lw.ToolInfo(
        name="finish",
        parameters={"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    )
    out = parse(P, act("finish", {"x": 1}), [finish, SUBMIT])
    assert (only_call(out).function, only_call(out).arguments) == ("finish", {"x": 1})
    out = parse(P, act("submit", {"answer": "y"}), [finish, SUBMIT])
    assert only_call(out).function == "submit"


def test_an_unparseable_reply_cut_by_the_context_window_is_left_for_the_loop() -> None:
    out = parse(P, '{"thought": "a long', stop_reason="model_length")
    assert out.tool_calls == [] and out.stop_reason == "model_length"


def test_an_empty_reply_renders_as_an_empty_turn() -> None:
    out = parse(P, "")
    history = [lw.UserMessage(content="task"), out.message]
    for proto in (JsonProtocol(), P):
        assert proto.render(history, TOOLS, lw.GenerateConfig()).messages[-1].content == ""


def test_backticks_inside_a_json_string_are_not_a_fence() -> None:
    out = parse(P, act("web_search", {"query": "a ```json\nb``` c"}, thought="``` x"))
    assert only_call(out).arguments == {"query": "a ```json\nb``` c"}
    assert out.message.reasoning == "``` x"
