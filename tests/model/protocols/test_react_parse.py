"""The react protocol's parser: one test per edge case of the issue, and then some."""

from __future__ import annotations

import pytest

import loopwright as lw
from loopwright.model.protocols import ReActProtocol, is_format_error

from .helpers import NO_SUBMIT, SUBMIT, TOOLS, error_of, only_call, parse

P = ReActProtocol()


def test_a_plain_action_becomes_a_tool_call_with_the_thought_as_reasoning() -> None:
    out = parse(
        P, 'Thought: I need the product.\nAction: multiply\nAction Input: {"a": 465, "b": 321}'
    )
    call = only_call(out)
    assert (call.function, call.arguments, call.parse_error) == (
        "multiply",
        {"a": 465, "b": 321},
        None,
    )
    assert out.message.reasoning == "I need the product."
    assert out.message.content == ""
    assert out.stop_reason == "tool_calls"
    assert not is_format_error(out)


def test_unlabelled_text_before_the_action_is_the_thought() -> None:
    out = parse(P, 'Let me multiply.\nAction: multiply\nAction Input: {"a": 1, "b": 2}')
    assert out.message.reasoning == "Let me multiply."


def test_json_in_fences_with_prose_around_it() -> None:
    text = (
        "Thought: multiply them\nAction: multiply\nAction Input: Here you go:\n"
        '```json\n{"a": 2, "b": 3}\n```\nThat should work.'
    )
    assert only_call(parse(P, text)).arguments == {"a": 2, "b": 3}


def test_braces_and_quotes_inside_strings() -> None:
    query = 'say "hi" to {name} and \\ {{x}}'
    text = 'Action: web_search\nAction Input: {"query": "say \\"hi\\" to {name} and \\\\ {{x}}"}'
    assert only_call(parse(P, text)).arguments == {"query": query}


def test_truncated_json_at_max_tokens_is_a_format_error() -> None:
    text = 'Action: web_search\nAction Input: {"query": "rm -rf /tmp/fo'
    out = parse(P, text, stop_reason="max_tokens")
    call = only_call(out)
    assert is_format_error(out)
    assert call.function == "web_search"
    assert call.parse_error is not None and "cut off" in call.parse_error


def test_truncated_json_that_stopped_normally_is_repaired() -> None:
    # the model forgot the closing brace (or the stop sequence cut it)
    out = parse(P, 'Action: multiply\nAction Input: {"a": 2, "b": 3')
    assert only_call(out).arguments == {"a": 2, "b": 3}


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("{'a': 2, 'b': 3}", {"a": 2, "b": 3}),
        ('{"a": 2, "b": 3,}', {"a": 2, "b": 3}),
        ('{"query": "x", "flag": True, "none": None}', {"query": "x", "flag": True, "none": None}),
    ],
    ids=["single-quotes", "trailing-comma", "python-literals"],
)
def test_near_json_is_repaired(written: str, expected: dict[str, object]) -> None:
    tools = [*TOOLS, lw.ToolInfo(name="anything", parameters={"type": "object"})]
    tool = "web_search" if "query" in expected else "multiply"
    if "flag" in expected:
        tool = "anything"
    out = parse(P, f"Action: {tool}\nAction Input: {written}", tools)
    assert only_call(out).arguments == expected


@pytest.mark.parametrize(
    "text",
    [
        'Action: web_search\nAction Input: {"query": "ratio 2:3 (approx.) :)"}',
        'Action: web_search\nAction Input: "ratio 2:3 (approx.) :)"',
        "Action: web_search\nAction Input: ratio 2:3 (approx.) :)",
    ],
    ids=["json", "quoted", "plain"],
)
def test_paren_and_colon_inside_arguments(text: str) -> None:
    assert only_call(parse(P, text)).arguments == {"query": "ratio 2:3 (approx.) :)"}


def test_a_hallucinated_observation_and_everything_after_it_is_dropped() -> None:
    text = (
        'Thought: go\nAction: multiply\nAction Input: {"a": 2, "b": 3}\n'
        "Observation: 7\nThought: so it is 7\nFinal Answer: 7"
    )
    out = parse(P, text)
    assert only_call(out).function == "multiply"
    # the history keeps only what was acted on
    history = [lw.UserMessage(content="task"), out.message]
    request = P.render(history, TOOLS, lw.GenerateConfig())
    assert request.messages[-1].content == (
        'Thought: go\nAction: multiply\nAction Input: {"a": 2, "b": 3}\n'
    )


def test_an_observation_line_in_any_case_is_cut_too() -> None:
    out = parse(P, "Action: clock\nAction Input: {}\n**observation**: noon\nFinal Answer: noon")
    assert only_call(out).function == "clock"


def test_action_and_final_answer_in_one_reply_the_action_wins() -> None:
    text = 'Action: multiply\nAction Input: {"a": 2, "b": 3}\nFinal Answer: 6'
    assert only_call(parse(P, text)).function == "multiply"
    text = 'Final Answer: 6\nAction: multiply\nAction Input: {"a": 2, "b": 3}'
    assert only_call(parse(P, text)).function == "multiply"


def test_several_actions_in_one_reply_only_the_first_runs() -> None:
    text = (
        "Thought: two things\nAction: clock\nAction Input: {}\n"
        'Thought: and then\nAction: multiply\nAction Input: {"a": 2, "b": 3}'
    )
    out = parse(P, text)
    assert only_call(out).function == "clock"
    request = P.render([lw.UserMessage(content="t"), out.message], TOOLS, lw.GenerateConfig())
    assert "multiply" not in request.messages[-1].content


def test_missing_action_input_for_a_tool_with_required_parameters() -> None:
    out = parse(P, "Thought: search\nAction: web_search")
    call = only_call(out)
    assert is_format_error(out)
    assert call.parse_error is not None and "'query'" in call.parse_error


def test_empty_action_input_is_missing_input() -> None:
    out = parse(P, "Action: multiply\nAction Input:   \n")
    assert is_format_error(out)


def test_missing_action_input_is_fine_for_a_tool_without_parameters() -> None:
    assert only_call(parse(P, "Action: clock")).arguments == {}
    assert only_call(parse(P, "Action: clock\nAction Input:")).arguments == {}


@pytest.mark.parametrize(
    "name",
    [
        "[web_search]",
        "`web_search`",
        '"web_search"',
        "'web_search'",
        "Web_Search",
        "WEB SEARCH",
        "web-search",
        "web_search()",
        "**web_search**",
        "functions.web_search",
    ],
)
def test_tool_names_in_brackets_quotes_backticks_or_other_case(name: str) -> None:
    out = parse(P, f'Action: {name}\nAction Input: {{"query": "x"}}')
    assert only_call(out).function == "web_search"


def test_markdown_bold_labels_are_understood() -> None:
    out = parse(P, '**Thought:** hm\n**Action:** multiply\n**Action Input:** {"a": 1, "b": 2}')
    assert only_call(out).arguments == {"a": 1, "b": 2}
    assert out.message.reasoning == "hm"
    out = parse(P, "**Thought**: __init__ is wrong\n**Action:**\n`clock`\n")
    assert only_call(out).function == "clock"
    assert out.message.reasoning == "__init__ is wrong"


def test_unknown_tool_names_pass_through_for_the_tool_layer_to_report() -> None:
    out = parse(P, 'Action: [calculator]\nAction Input: {"x": 1}')
    call = only_call(out)
    assert (call.function, call.arguments, call.parse_error) == ("calculator", {"x": 1}, None)


@pytest.mark.parametrize("text", ["I think the answer is 42.", "Thought: hmm, let me think."])
def test_plain_text_with_no_action_is_a_format_error(text: str) -> None:
    out = parse(P, text)
    assert is_format_error(out)
    # no tool named: no (fake) tool call; the message keeps the text and says what is wrong
    assert out.tool_calls == []
    error = out.message.format_error
    assert error is not None and "no Action and no Final Answer" in error
    # the error shows the expected format and the valid tool names
    assert "Action Input:" in error and "multiply" in error
    assert out.message.content == text  # what the model wrote is kept


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_replies_are_format_errors(text: str) -> None:
    out = parse(P, text)
    assert is_format_error(out)
    assert "empty" in error_of(out)


@pytest.mark.parametrize("answer", ["0", "", "false", "[]", "None"])
def test_falsy_final_answers_are_answers(answer: str) -> None:
    out = parse(P, f"Thought: done\nFinal Answer: {answer}")
    call = only_call(out)
    assert (call.function, call.arguments) == ("submit", {"answer": answer})
    assert out.message.reasoning == "done"


@pytest.mark.parametrize("answer", ["0", "", "false", "[]"])
def test_falsy_final_answers_without_a_submit_tool_are_the_text(answer: str) -> None:
    out = parse(P, f"Final Answer: {answer}", NO_SUBMIT)
    assert out.tool_calls == []
    assert out.message.content == answer
    assert not is_format_error(out)


def test_a_multiline_final_answer_is_kept_whole() -> None:
    out = parse(P, "Final Answer: line one\nline two\n\n- item", NO_SUBMIT)
    assert out.message.content == "line one\nline two\n\n- item"


def test_action_final_answer_counts_as_a_final_answer() -> None:
    out = parse(P, "Action: Final Answer\nAction Input: 42")
    assert only_call(out).arguments == {"answer": "42"}
    out = parse(P, 'Action: finish\nAction Input: {"answer": "42"}')
    assert only_call(out).arguments == {"answer": "42"}


def test_an_explicit_submit_action_is_a_normal_call() -> None:
    out = parse(P, 'Action: submit\nAction Input: {"answer": "x"}')
    assert only_call(out).function == "submit"


def test_plain_text_input_goes_to_a_single_string_tool() -> None:
    out = parse(P, "Action: web_search\nAction Input: weather in Paris\n")
    assert only_call(out).arguments == {"query": "weather in Paris"}


def test_json_looking_text_for_a_single_string_tool_with_foreign_keys_is_text() -> None:
    out = parse(P, 'Action: web_search\nAction Input: {"input": "x"}')
    assert only_call(out).arguments == {"query": '{"input": "x"}'}


def test_a_bare_value_fills_the_only_parameter() -> None:
    tool = lw.ToolInfo(
        name="square",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )
    assert only_call(parse(P, "Action: square\nAction Input: 12", [tool])).arguments == {"n": 12}


def test_plain_text_for_a_tool_with_several_parameters_is_a_format_error() -> None:
    out = parse(P, "Action: multiply\nAction Input: two and three")
    assert is_format_error(out)
    call = only_call(out)
    assert call.function == "multiply"
    assert call.parse_error is not None and "JSON object" in call.parse_error


def test_invalid_json_for_a_multi_parameter_tool_says_so() -> None:
    out = parse(P, "Action: multiply\nAction Input: {{{")
    assert is_format_error(out)


def test_inline_input_in_brackets_is_understood() -> None:
    out = parse(P, "Thought: look it up\nAction: web_search[capital of France]")
    assert only_call(out).arguments == {"query": "capital of France"}


def test_an_action_naming_nothing_is_a_format_error() -> None:
    out = parse(P, "Action:\nAction Input: {}")
    assert is_format_error(out)


def test_action_input_without_action_is_a_format_error() -> None:
    out = parse(P, 'Thought: x\nAction Input: {"a": 1}')
    assert "no Action naming the tool" in error_of(out)


def test_a_think_block_goes_to_the_reasoning() -> None:
    out = parse(P, "<think>long musing</think>\nThought: short\nAction: clock")
    assert only_call(out).function == "clock"
    assert out.message.reasoning == "long musing\n\nshort"


def test_provider_tool_calls_are_left_alone() -> None:
    request = P.render([lw.UserMessage(content="t")], TOOLS, lw.GenerateConfig())
    native = lw.ModelOutput.for_tool_call("clock", {})
    assert P.parse(native, request) is native


def test_with_no_tools_the_reply_is_plain_text() -> None:
    out = parse(P, "Final Answer: hello", [])
    assert out.tool_calls == [] and out.message.content == "Final Answer: hello"


def test_the_answer_tool_can_be_named() -> None:
    done = SUBMIT.model_copy(update={"name": "done"})
    out = parse(ReActProtocol(answer_tool="done"), "Final Answer: 1", [*NO_SUBMIT, done])
    assert only_call(out).function == "done"


@pytest.mark.parametrize("stop", ["model_length", "content_filter"])
def test_an_unusable_reply_cut_by_the_context_or_a_filter_is_left_for_the_loop(
    stop: lw.StopReason,
) -> None:
    out = parse(P, "Thought: I was thinking about", stop_reason=stop)
    assert out.tool_calls == [] and out.stop_reason == stop
    assert out.message.content == "Thought: I was thinking about"


def test_a_reply_cut_by_max_tokens_before_any_action_says_so() -> None:
    out = parse(P, "Thought: a very long musing that never", stop_reason="max_tokens")
    error = error_of(out)
    assert error.startswith("Your reply was cut off by the output token limit")
    assert out.stop_reason == "max_tokens"


def test_a_format_error_keeps_no_hallucinated_observation_in_the_history() -> None:
    out = parse(P, "Thought: x\nAction: multiply\nAction Input: two and three\nObservation: 6")
    assert is_format_error(out)
    history = [lw.UserMessage(content="task"), out.message]
    rendered = P.render(history, TOOLS, lw.GenerateConfig()).messages[-1].content
    assert "Observation" not in rendered and rendered.startswith("Thought: x\nAction: multiply")


def test_an_empty_reply_renders_as_an_empty_turn() -> None:
    out = parse(P, "")
    history = [lw.UserMessage(content="task"), out.message]
    for proto in (ReActProtocol(), P):
        assert proto.render(history, TOOLS, lw.GenerateConfig()).messages[-1].content == ""


def test_backticks_inside_a_json_string_are_not_a_fence() -> None:
    out = parse(P, 'Action: web_search\nAction Input: {"query": "``` and ```json"}')
    assert only_call(out).arguments == {"query": "``` and ```json"}
